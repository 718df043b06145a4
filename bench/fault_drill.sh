#!/usr/bin/env bash
# Fault drill: a router and 3 workers (stories260K, 1 thread each) on
# loopback under STREAMS concurrent streaming clients (default 64), while
# one fault after another is injected, PHASE seconds apart (default 8):
#   worker w0 kill -9; w0 restarted on its port (a new epoch); w1 SIGSTOP
#   (hung), then SIGCONT; w2 slowed by 300 ms per engine step
#   (WorkerAdmin.InjectFault), then back; a gap in w0's KV event stream (one
#   batch dropped: routers must resubscribe); the router kill -9 and
#   restarted on its ports.
# Prints per fault the requests lost, the streams cut, TTFT, when errors
# stopped and what clients saw (fault_drill report), and how the router's
# prefix index recovered after the event gap and the router restart.
# Takes about 11 × PHASE seconds plus start-up (~100 s by default).
#   B=build/ci bench/fault_drill.sh [STREAMS] [PHASE]
# KEEP=DIR keeps the per-request records, the marks and the logs there.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
STREAMS=${1:-64}
PHASE=${2:-8}
model=${KVMESH_MODEL:-../shared/models/stories260K.gguf}
tmp=$(mktemp -d)
base=$((23000 + $$ % 2000))
pids=()
cleanup() {
  kill -CONT "${pids[@]}" 2>/dev/null || true
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/* "$KEEP"/; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
field() { grep -o "$1=[^ ]*" "$2" 2>/dev/null | head -1 | cut -d= -f2; }
wait_listening() { for _ in $(seq 200); do grep -qs listening "$1" && return 0; sleep 0.05; done; cat "${1%.out}.err" >&2; return 1; }

declare -A wpid
start_worker() {  # start_worker I
  local i=$1
  "$B/worker/kvmesh-worker" --model "$model" --grpc-port $((base + i)) --http-port $((base + 10 + i)) \
    --threads 1 --worker-id "w$i" --kv-memory 64MiB --log-level warning \
    >"$tmp/w$i.out" 2>>"$tmp/w$i.err" &
  wpid[$i]=$!
  pids+=($!)
  wait_listening "$tmp/w$i.out"
}
rpid=""
start_router() {
  : >"$tmp/r.out"
  "$B/router/kvmesh-router" --grpc-port $((base + 20)) --http-port $((base + 21)) \
    --workers "127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))" \
    --request-timeout-seconds 3 --log-level warning >"$tmp/r.out" 2>>"$tmp/r.err" &
  rpid=$!
  pids+=($!)
  wait_listening "$tmp/r.out"
}
now_ms() { date +%s%3N; }
mark() { echo "$(now_ms) $*" >>"$tmp/marks.tsv"; echo "[$(date +%T)] $*"; }
index_blocks() {  # the router's indexed blocks for worker $1 (0 when unknown)
  curl -s "http://127.0.0.1:$((base + 21))/metrics" |
    awk -v w="kvmesh_router_index_blocks{worker=\"$1\"}" '$1 == w {print $2; f=1} END {if (!f) print 0}'
}
# Seconds until worker $1's indexed blocks are back to at least $2 (polls for up to PHASE s).
index_recovery() {
  local t0 now blocks
  t0=$(now_ms)
  while :; do
    blocks=$(index_blocks "$1")
    now=$(now_ms)
    if awk -v b="$blocks" -v want="$2" 'BEGIN {exit !(b + 0 >= want + 0 && want + 0 > 0)}'; then
      echo "$(awk -v d=$((now - t0)) 'BEGIN {printf "%.2f", d / 1000}') s ($blocks blocks)"
      return
    fi
    if [ $((now - t0)) -gt $((PHASE * 1000)) ]; then echo "not within ${PHASE} s ($blocks blocks)"; return; fi
    sleep 0.05
  done
}

for i in 0 1 2; do start_worker "$i"; done
start_router
sleep 1
echo "load: $(uptime)"
"$B/bench/fault_drill" load --router "127.0.0.1:$((base + 20))" --streams "$STREAMS" \
  --seconds $((PHASE * 10 + 4)) --out "$tmp/records.tsv" &
load=$!
sleep 2
mark "baseline"
sleep "$PHASE"
mark "w0 kill -9"
kill -9 "${wpid[0]}"
sleep "$PHASE"
mark "w0 restarted (new epoch)"
start_worker 0
sleep "$PHASE"
mark "w1 SIGSTOP (hung)"
kill -STOP "${wpid[1]}"
sleep "$PHASE"
mark "w1 SIGCONT"
kill -CONT "${wpid[1]}"
sleep "$PHASE"
mark "w2 +300 ms per step"
"$B/bench/fault_drill" inject --worker "127.0.0.1:$((base + 2))" --step-delay-ms 300 >/dev/null
sleep "$PHASE"
mark "w2 back to normal"
"$B/bench/fault_drill" inject --worker "127.0.0.1:$((base + 2))" --step-delay-ms 0 >/dev/null
sleep "$PHASE"
before=$(index_blocks w0)
mark "w0 KV event gap"
"$B/bench/fault_drill" inject --worker "127.0.0.1:$base" --drop-kv-event-batches 1 >/dev/null
sleep 0.5
gap_recovery=$(index_recovery w0 "$before")
gap_log=$(grep -c "skipped a batch" "$tmp/r.err" || true)
sleep "$PHASE"
before_restart=$(( $(index_blocks w0) + $(index_blocks w1) + $(index_blocks w2) ))
mark "router kill -9, restarted"
kill -9 "$rpid"
t_kill=$(now_ms)
start_router
t_up=$(now_ms)
restart_recovery=$(index_recovery w0 1)
after_restart=$(( $(index_blocks w0) + $(index_blocks w1) + $(index_blocks w2) ))
wait "$load"

echo
"$B/bench/fault_drill" report --records "$tmp/records.tsv" --marks "$tmp/marks.tsv"
echo
echo "KV event gap on w0: the router logged $gap_log resubscribe(s); w0's index (${before} blocks before) was back in ${gap_recovery}."
echo "Router restart: listening again $(( t_up - t_kill )) ms after kill -9; w0's index rebuilt from the snapshot in ${restart_recovery}; ${before_restart} blocks indexed before, ${after_restart} after."
echo "Requests in total: $(wc -l <"$tmp/records.tsv"); router RSS after the run: $(ps -o rss= -p "$rpid") KiB."
