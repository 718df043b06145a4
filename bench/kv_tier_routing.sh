#!/usr/bin/env bash
# Cluster-wide routing with and without the host tier's tags: for each mode,
# a fresh cluster (router + 2 workers, each with a device tier of DEVICE_TOKENS
# and a host tier) serves the same agent sessions (bench/router_sessions):
# SESSIONS concurrent sessions whose contexts grow by USER_TOKENS tokens a turn, so
# each worker's device tier cannot keep all of its sessions. "aware" prices
# host-tier hits by the workers' measured restore speed; "ignore"
# (--prefix-host-tier=false) treats them as misses, as a router that cannot
# see a worker's RAM cache would. Prints one row per mode and the load.
#   [SESSIONS=6] [TURNS=3] [USER_TOKENS=1024] [DEVICE_TOKENS=4608] [BUILD_DIR=build]
#   bench/kv_tier_routing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
SESSIONS=${SESSIONS:-6}
TURNS=${TURNS:-3}
USER_TOKENS=${USER_TOKENS:-1024}
DEVICE_TOKENS=${DEVICE_TOKENS:-4608}
CONTEXT=$(((USER_TOKENS + 16) * TURNS + 64))
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
field() { grep -o "$1=[^ ]*" "$2" 2>/dev/null | head -1 | cut -d= -f2; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$SESSIONS sessions x $TURNS turns of $USER_TOKENS tokens; device tier $DEVICE_TOKENS tokens per worker, host tier 256MiB"
printf '%-8s %10s %14s %14s %10s %8s\n' mode hit% ttft_mean_ms ttft_p90_ms max/min seconds
for mode in aware ignore; do
  for i in 0 1; do
    "$B/worker/kvmesh-worker" --grpc-port 0 --http-port 0 --threads 1 --worker-id "w$i" \
      --log-level warning --context-length "$CONTEXT" --allow-context-overflow \
      --kv-memory $((DEVICE_TOKENS * 640)) --kv-host-memory 256MiB \
      >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
  done
  addrs=()
  for i in 0 1; do
    for _ in $(seq 100); do grep -qs listening "$tmp/w$i.out" && break; sleep 0.1; done
    grep -qs listening "$tmp/w$i.out" || { cat "$tmp/w$i.err"; exit 1; }
    addrs+=("$(field grpc "$tmp/w$i.out")")
  done
  flag=true
  [ "$mode" = ignore ] && flag=false
  "$B/router/kvmesh-router" --grpc-port 0 --http-port 0 --policy prefix --log-level warning \
    --prefix-host-tier="$flag" --workers "$(IFS=,; echo "${addrs[*]}")" \
    >"$tmp/r.out" 2>"$tmp/r.err" &
  for _ in $(seq 100); do grep -qs listening "$tmp/r.out" && break; sleep 0.1; done
  sleep 1  # let the router see every worker healthy
  json=$("$B/bench/router_sessions" --router "$(field grpc "$tmp/r.out")" --sessions "$SESSIONS" \
    --turns "$TURNS" --concurrency "$SESSIONS" --system-tokens 0 --user-tokens "$USER_TOKENS" \
    --reply-tokens 16 | tail -1)
  python3 - "$mode" "$json" <<'PY'
import json, sys
p, j = sys.argv[1], json.loads(sys.argv[2])
print(f"{p:<8} {100*j['hit_ratio']:>9.1f}% {j['ttft_mean_ms']:>14.1f} {j['ttft_p90_ms']:>14.1f} "
      f"{str(j['max_load'])+'/'+str(j['min_load']):>10} {j['seconds']:>8.1f}")
PY
  for i in 0 1; do
    curl -s "http://$(field http "$tmp/w$i.out")/metrics" |
      grep -E '^kvmesh_worker_kv_hit_blocks_total' | tr '\n' ' '
    echo
  done
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
