#!/usr/bin/env bash
# Does kvmesh predict the same next tokens as llama.cpp on the synthetic
# llama-1b files? For each type and each of three prompts, llama.cpp
# (../shared/peer) decodes 64 greedy steps and reports its top-10 at each;
# kvmesh_logit_agreement runs the same tokens (teacher forcing) and compares
# its argmax and its log-probabilities of llama.cpp's top-10 at every step.
# Prints a markdown table: top-1 agreement, the first step that disagrees,
# and the largest |d logprob| (absolute, and relative to llama.cpp's).
#
#   bench/synthetic_agreement.sh [--types "q8_0 q4_0 q4_k_m f16"] [--steps 64]
#
# Environment as bench/cpu_vs_llamacpp.sh (BUILD, MODELS, SHARED, NLC_DIR).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
MODELS=${MODELS:-$HOME/kvmesh-models}
SHARED=${SHARED:-$ROOT/../shared}
NLC_DIR=${NLC_DIR:-$HOME/nlc}
PEER=$SHARED/peer/llamacpp_peer.mjs
TYPES="q8_0 q4_0 q4_k_m f16"
STEPS=64
while [ $# -gt 0 ]; do
  case "$1" in
    --types) TYPES=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
KVMESH=$BUILD/cli/kvmesh
AGREE=$BUILD/bench/kvmesh_logit_agreement
PROMPTS=("The quick brown fox" "Once upon a time, in a small village" "def fibonacci(n):")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$MODELS"

echo "| model | prompt | top-1 agreement | first disagreement | max abs d logprob | max rel d logprob |"
echo "|---|---|---|---|---|---|"
for type in $TYPES; do
  f=$MODELS/llama-1b-$type.gguf
  [ -f "$f" ] || "$KVMESH" synth --shape llama-1b --type "$type" -o "$f" >&2
  for prompt in "${PROMPTS[@]}"; do
    (cd "$NLC_DIR" && node "$PEER" topk --model "$f" --prompt "$prompt" --steps "$STEPS" -k 10 \
      --threads 2) > "$TMP/peer.json" 2>/dev/null
    "$AGREE" -m "$f" --peer-json "$TMP/peer.json" -t 2 > "$TMP/ours.json"
    python3 - "$TMP/ours.json" "llama-1b $type" "$prompt" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
first = d["first_disagreement"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d['top1_agree']}/{d['steps']} | "
      f"{'none' if first < 0 else first} | {d['max_abs_dlogprob']:.4f} | {d['max_rel_dlogprob']:.4f} |")
PY
  done
done
