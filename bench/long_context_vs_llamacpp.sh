#!/usr/bin/env bash
# Long-context prefill next to a native llama.cpp build with flash attention:
# for each model and prompt length, ROUNDS rounds of `kvmesh bench -p N -n 0`
# then `llama-bench -p N -n 0 -fa 1` (same file, same KV cache type - f16
# unless --kv-type says otherwise - same threads),
# alternating. Prints a markdown table of medians (prompt tokens/s) and the
# ratio kvmesh / llama.cpp, with the load average before and after.
#
#   LLAMA_BENCH=/path/to/llama-bench bench/long_context_vs_llamacpp.sh
#       [--lengths "16384"] [--rounds 1] [--threads 2] [--kv-type f16] [MODEL ...]
#
# Each run is one timed prefill of N tokens from an empty cache (kvmesh warms
# up on up to 1024 tokens first; llama-bench on its own short warm-up).
# stories260K and tinystories-d64 train on short contexts: past them the
# outputs mean nothing, but the attention work is the same as any model's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SHARED=${SHARED:-$ROOT/../shared}
LLAMA_BENCH=${LLAMA_BENCH:?set LLAMA_BENCH to a native llama.cpp build\'s llama-bench (../shared/TOOLS.md, section P)}
LENGTHS="16384"
ROUNDS=1
THREADS=2
KV_TYPE=f16
MODELS_LIST=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lengths) LENGTHS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --kv-type) KV_TYPE=$2; shift 2 ;;
    *) MODELS_LIST+=("$1"); shift ;;
  esac
done
[ ${#MODELS_LIST[@]} -eq 0 ] &&
  MODELS_LIST=("$SHARED/models/stories260K.gguf" "$SHARED/models/tinystories-d64.gguf")
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
for model in "${MODELS_LIST[@]}"; do
  for n in $LENGTHS; do
    ours=() theirs=()
    for ((r = 0; r < ROUNDS; ++r)); do
      ours+=("$("$BUILD/cli/kvmesh" bench -m "$model" -p "$n" -n 0 -r 1 --threads "$THREADS" \
        --kv-type "$KV_TYPE" --json |
        tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["pp_tokens_per_s"])')")
      theirs+=("$("$LLAMA_BENCH" -m "$model" -p "$n" -n 0 -fa 1 -t "$THREADS" \
        -ctk "$KV_TYPE" -ctv "$KV_TYPE" -r 1 -o json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])')")
      echo "$(basename "$model") pp$n round $r: kvmesh ${ours[-1]} t/s, llama.cpp ${theirs[-1]} t/s" >&2
    done
    rows+=("$(python3 - "$(basename "$model")" "$n" "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
name, n, a, b = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"| {name} | {n} | {ma:.0f} | {mb:.0f} | {ma / mb:.2f}x |")
PY
)")
  done
done
echo "KV cache: $KV_TYPE"
echo "| model | prompt tokens | kvmesh t/s | llama.cpp -fa 1 t/s | kvmesh / llama.cpp |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
