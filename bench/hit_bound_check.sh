#!/usr/bin/env bash
# Checks router_sessions' reuse bound against real workers (CTest
# router_sessions_hit_bound, about 10 s):
#   - one worker with room for everything, one session at a time: the worker
#     serves exactly what the bound says an unbounded cache could (so the
#     bound counts blocks as a worker does);
#   - round robin over two workers, where each turn lands on the other
#     worker than its session's last: under the bound.
#
#   bench/hit_bound_check.sh BUILD_DIR MODEL
set -euo pipefail
cd "$(dirname "$0")/.."
B=$1
MODEL=$2
if [[ ! -f $MODEL ]]; then
  echo "SKIP: model $MODEL not found"
  exit 0
fi
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
. bench/cluster_lib.sh
sessions() {
  "$B/bench/router_sessions" --router "$ROUTER" --sessions 6 --tenants 2 --turns 3 \
    --concurrency 1 --system-tokens 100 --user-tokens 20 --reply-tokens 10 >"$tmp/out" || true
  tail -1 "$tmp/out"
}
start_cluster 1 prefix --model "$MODEL"
one=$(sessions)
stop_cluster
start_cluster 2 round_robin --model "$MODEL"
two=$(sessions)
stop_cluster
python3 - "$one" "$two" <<'PY'
import json, sys
one, two = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"one worker: hit ratio {one['hit_ratio']:.4f}, bound {one['hit_bound']:.4f}")
print(f"round robin on two: hit ratio {two['hit_ratio']:.4f}, bound {two['hit_bound']:.4f}")
ok = True
if one["failures"] or two["failures"]:
    print("FAIL: requests failed"); ok = False
if not 0.5 < one["hit_bound"] < 1:
    print("FAIL: the bound of six sessions over two shared prefixes should be over half"); ok = False
if abs(one["hit_ratio"] - one["hit_bound"]) > 1e-4:
    print("FAIL: one worker that holds everything should serve exactly the bound"); ok = False
if abs(two["hit_bound"] - one["hit_bound"]) > 1e-4:
    print("FAIL: the same traffic should have the same bound"); ok = False
if not two["hit_ratio"] < two["hit_bound"] - 0.05:
    print("FAIL: round robin moves every turn and should fall under the bound"); ok = False
sys.exit(0 if ok else 1)
PY
