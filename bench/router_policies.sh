#!/usr/bin/env bash
# prefix vs round_robin vs least_load vs approx_prefix on agent-like traffic: for each policy,
# a fresh cluster (router + 2 workers, cold caches) serves the same sessions
# (bench/router_sessions). Prints one row per policy and the machine load.
#   [WORKERS=2] [BUILD_DIR=build] bench/router_policies.sh [router_sessions args...]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
WORKERS=${WORKERS:-2}
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(--sessions 16 --turns 6 --concurrency 4)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
. bench/cluster_lib.sh
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %10s %14s %14s %10s %8s\n' policy hit% ttft_mean_ms ttft_p90_ms max/min seconds
for policy in prefix round_robin least_load approx_prefix; do
  start_cluster "$WORKERS" "$policy"
  json=$("$B/bench/router_sessions" --router "$ROUTER" "${ARGS[@]}" | tail -1)
  python3 - "$policy" "$json" <<'PY'
import json, sys
p, j = sys.argv[1], json.loads(sys.argv[2])
print(f"{p:<12} {100*j['hit_ratio']:>9.1f}% {j['ttft_mean_ms']:>14.1f} {j['ttft_p90_ms']:>14.1f} "
      f"{str(j['max_load'])+'/'+str(j['min_load']):>10} {j['seconds']:>8.1f}")
PY
  stop_cluster
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
