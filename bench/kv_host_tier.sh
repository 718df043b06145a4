#!/usr/bin/env bash
# The host-RAM KV tier, side by side: two workers on the same model and
# device budget, one with --kv-host-memory and one without, serve the same
# session (bench/kv_host_tier.cc). The device tier holds a bit more than one
# prefix, so other sessions push it out. Prints a markdown table and the load.
#   [PREFIX=16384] [OTHER=4096] [OTHERS=2] [ROUNDS=3] [HOST_MEMORY=1GiB]
#   [MODEL=../shared/models/stories260K.gguf] [BUILD_DIR=build] bench/kv_host_tier.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
PREFIX=${PREFIX:-16384}
OTHER=${OTHER:-4096}
OTHERS=${OTHERS:-2}
ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-../shared/models/stories260K.gguf}
HOST_MEMORY=${HOST_MEMORY:-1GiB}
CONTEXT=$((PREFIX + 64))  # each request alone; OTHER must not exceed PREFIX
# Room for the prefix plus a quarter: the other sessions evict most of it.
DEVICE_TOKENS=$((PREFIX * 5 / 4))
BYTES_PER_TOKEN=$("$B/cli/kvmesh" kv-plan -m "$MODEL" --context 16 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_token"])')
DEVICE_BYTES=$((DEVICE_TOKENS * BYTES_PER_TOKEN))
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
field() { grep -o "$1=[^ ]*" "$2" 2>/dev/null | head -1 | cut -d= -f2; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start_worker() {  # name, extra flags...
  local name=$1
  shift
  "$B/worker/kvmesh-worker" --model "$MODEL" --grpc-port 0 --http-port 0 --threads 1 \
    --worker-id "$name" --log-level warning --context-length "$CONTEXT" \
    --allow-context-overflow --kv-memory "$DEVICE_BYTES" --max-tokens-per-step 2048 "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
}
start_worker with --kv-host-memory "$HOST_MEMORY"
start_worker without
for w in with without; do
  for _ in $(seq 300); do grep -qs listening "$tmp/$w.out" && break; sleep 0.1; done
  grep -qs listening "$tmp/$w.out" || { cat "$tmp/$w.err"; exit 1; }
done
echo "device tier: $DEVICE_TOKENS tokens ($DEVICE_BYTES bytes) per worker; host tier: $HOST_MEMORY on one"
"$B/bench/kv_host_tier" --with "$(field grpc "$tmp/with.out")" \
  --without "$(field grpc "$tmp/without.out")" --prefix-tokens "$PREFIX" \
  --other-tokens "$OTHER" --others "$OTHERS" --rounds "$ROUNDS"
curl -s "http://$(field http "$tmp/with.out")/metrics" | grep -E '^kvmesh_worker_kv_(hit_blocks|tier_copy)' || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
