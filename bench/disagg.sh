#!/usr/bin/env bash
# Disaggregated against colocated serving on the same two workers: chat
# decodes while long prompts arrive (bench/disagg_mix). Colocated: two
# workers of role both behind the prefix policy. Disaggregated: one prefill
# worker and one decode worker. Each configuration runs ROUNDS times,
# alternating; prints one markdown row per run and the machine load.
#
# PIN=1 gives each worker a core of its own, as each would have its own GPU:
# worker 0 (the prefill worker when disaggregated) on CPU 0, worker 1 (the
# decode worker) on CPU 1 with the router and the client. The decode
# worker's baseline and its mixed phase then run on the same core, and the
# prefill work lands on the other one. Without it (the default) every
# process floats over every core.
#
#   [PIN=0] [ROUNDS=2] [CHAT=3] [REPLY_TOKENS=64] [LONG_TOKENS=3000] [LONG_INTERVAL_MS=1500]
#   [PHASE_SECONDS=10] [MODEL=../shared/models/tinystories-d64.gguf] [BUILD_DIR=build]
#   bench/disagg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-2}
MODEL=${MODEL:-../shared/models/tinystories-d64.gguf}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
. bench/cluster_lib.sh
client_pin=()
if [[ ${PIN:-0} == 1 ]]; then
  export WORKER_CPUS="0 1" ROUTER_CPUS=1
  client_pin=(taskset -c 1)
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "2 workers x 1 thread$([[ ${PIN:-0} == 1 ]] && echo ", pinned: worker 0 on CPU 0, worker 1, router and client on CPU 1"), $(basename "$MODEL"), ${CHAT:-3} chat streams x ${REPLY_TOKENS:-64}" \
  "tokens, a ${LONG_TOKENS:-3000}-token prompt every ${LONG_INTERVAL_MS:-1500} ms"
echo
echo "| serving | ITL p99 alone / mixed ms | ITL p99.9 alone / mixed ms | TPOT p99 alone / mixed ms | ITL p99 ratio | TPOT p99 ratio | chat TTFT p90 mixed ms | long TTFT p50 / p90 ms | long prompts |"
echo "|---|---|---|---|---:|---:|---:|---|---:|"
fetch_lines=()
for ((round = 0; round < ROUNDS; ++round)); do
  for mode in colocated disaggregated; do
    if [[ $mode == disaggregated ]]; then roles="prefill decode"; else roles=""; fi
    ROLES=$roles ROUTER_FLAGS="--disagg-min-prompt-tokens 256" \
      start_cluster 2 prefix --model "$MODEL" --context-length 4096 --allow-context-overflow
    json=$(${client_pin[@]+"${client_pin[@]}"} "$B/bench/disagg_mix" --router "$ROUTER" --chat "${CHAT:-3}" \
      --reply-tokens "${REPLY_TOKENS:-64}" --long-tokens "${LONG_TOKENS:-3000}" \
      --long-interval-ms "${LONG_INTERVAL_MS:-1500}" --phase-seconds "${PHASE_SECONDS:-10}" |
      tail -1 || true)
    fetch=""
    if [[ $mode == disaggregated ]]; then
      # The decode worker's fetches: tokens, bytes and seconds.
      fetch=$(curl -s "http://$(field http "$tmp/w1.out")/metrics" | python3 -c '
import sys
m = {}
for line in sys.stdin:
    if line.startswith("kvmesh_worker_peer_"):
        k, v = line.rsplit(" ", 1); m[k] = float(v)
t = m.get("kvmesh_worker_peer_fetch_tokens_total", 0); s = m.get("kvmesh_worker_peer_fetch_seconds_total", 0)
b = m.get("kvmesh_worker_peer_page_bytes_total{direction=\"in\"}", 0)
print(f"{t:.0f} tokens fetched, {t / s:.0f} tokens/s, {b / s / 1e6:.0f} MB/s" if s else "no fetch")')
    fi
    stop_cluster
    python3 - "$mode" "$json" <<'PY'
import json, sys
mode = sys.argv[1]
try:
    j = json.loads(sys.argv[2])
except ValueError:
    print(f"| {mode} | (disagg_mix failed) | | | | | | | |"); sys.exit()
fail = f" ({j['failures']} failed)" if j['failures'] else ""
r = lambda a, b: j[b] / max(j[a], 1e-9)
print(f"| {mode} | {j['itl_p99_alone_ms']:.2f} / {j['itl_p99_mixed_ms']:.2f} | "
      f"{j['itl_p999_alone_ms']:.2f} / {j['itl_p999_mixed_ms']:.2f} | "
      f"{j['tpot_p99_alone_ms']:.2f} / {j['tpot_p99_mixed_ms']:.2f} | "
      f"{r('itl_p99_alone_ms', 'itl_p99_mixed_ms'):.2f}x | {r('tpot_p99_alone_ms', 'tpot_p99_mixed_ms'):.2f}x | "
      f"{j['chat_ttft_p90_mixed_ms']:.1f} | {j['long_ttft_p50_ms']:.0f} / {j['long_ttft_p90_ms']:.0f} | "
      f"{j['long_prompts']}{fail} |")
PY
    [[ -n $fetch ]] && fetch_lines+=("round $round: $fetch")
  done
done
echo
echo "peer fetches of the decode worker:"
printf '  %s\n' "${fetch_lines[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
