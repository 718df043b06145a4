#!/usr/bin/env bash
# 1,000 concurrent streaming clients: through one router to 2 workers
# (stories260K, 1 thread each) over gRPC, then over the HTTP gateway (OpenAI
# streaming completions, one connection per request, --http-threads
# STREAMS), then the same load per worker straight to the workers (STREAMS/2
# clients on each), alternating ROUNDS times. Each
# client sends one greedy 16-token streaming Generate after another for
# SECONDS. Prints, per run, requests, errors by what clients saw, TTFT
# p50/p99/max (fault_drill report), and the router's peak RSS; the router's
# added latency is the difference between the two.
# Takes about ROUNDS × 3 × (SECONDS + 5) seconds (~210 s by default).
# QUEUE (default STREAMS) is each worker's --max-waiting-requests: below
# STREAMS/2 the cluster is overloaded, and what clients see past it is the
# admission answer (gRPC RESOURCE_EXHAUSTED, HTTP 429 with Retry-After).
#   B=build/ci [QUEUE=N] bench/stream_load.sh [STREAMS] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
STREAMS=${1:-1000}
QUEUE=${QUEUE:-$STREAMS}
SECONDS_PER_RUN=${2:-30}
ROUNDS=${3:-2}
model=${KVMESH_MODEL:-../shared/models/stories260K.gguf}
tmp=$(mktemp -d)
base=$((25000 + $$ % 2000))
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
wait_listening() { for _ in $(seq 200); do grep -qs listening "$1" && return 0; sleep 0.05; done; cat "${1%.out}.err" >&2; return 1; }
# Room for every stream in the workers' queues: this measures latency, not
# admission (past it a worker answers RESOURCE_EXHAUSTED, the router tries
# the other one, then the client gets RESOURCE_EXHAUSTED / HTTP 429).
for i in 0 1; do
  "$B/worker/kvmesh-worker" --model "$model" --grpc-port $((base + i)) --http-port $((base + 10 + i)) \
    --threads 1 --worker-id "w$i" --kv-memory 64MiB --max-waiting-requests "$QUEUE" \
    --log-level warning >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
  pids+=($!)
  wait_listening "$tmp/w$i.out"
done
"$B/router/kvmesh-router" --grpc-port $((base + 20)) --http-port $((base + 21)) \
  --workers "127.0.0.1:$base,127.0.0.1:$((base + 1))" --http-threads "$STREAMS" \
  --log-level warning >"$tmp/r.out" 2>"$tmp/r.err" &
rpid=$!
pids+=($rpid)
wait_listening "$tmp/r.out"
sleep 1
echo "load before: $(uptime)"
for round in $(seq "$ROUNDS"); do
  "$B/bench/fault_drill" load --router "127.0.0.1:$((base + 20))" --streams "$STREAMS" \
    --seconds "$SECONDS_PER_RUN" --out "$tmp/router$round.tsv"
  echo "round $round, through the router's gRPC ($STREAMS streams; router peak RSS $(awk '/VmHWM/ {print $2, $3}' /proc/$rpid/status)):"
  "$B/bench/fault_drill" report --records "$tmp/router$round.tsv" --label "through the router (gRPC)"
  "$B/bench/fault_drill" load --http "127.0.0.1:$((base + 21))" --streams "$STREAMS" \
    --seconds "$SECONDS_PER_RUN" --out "$tmp/http$round.tsv"
  echo "round $round, through the router's HTTP gateway ($STREAMS streams; router peak RSS $(awk '/VmHWM/ {print $2, $3}' /proc/$rpid/status)):"
  "$B/bench/fault_drill" report --records "$tmp/http$round.tsv" --label "through the router (HTTP, OpenAI streaming)"
  loads=()
  for i in 0 1; do
    "$B/bench/fault_drill" load --worker "127.0.0.1:$((base + i))" --streams $((STREAMS / 2)) \
      --seconds "$SECONDS_PER_RUN" --out "$tmp/direct$round-$i.tsv" &
    loads+=($!)
  done
  wait "${loads[@]}"
  cat "$tmp/direct$round-0.tsv" "$tmp/direct$round-1.tsv" >"$tmp/direct$round.tsv"
  echo "round $round, straight to the workers ($((STREAMS / 2)) streams each):"
  "$B/bench/fault_drill" report --records "$tmp/direct$round.tsv" --label "straight to the workers"
done
echo "load after: $(uptime)"
