#!/usr/bin/env bash
# Does kvmesh predict the same next tokens as llama.cpp on the synthetic
# files of a shape (llama-1b unless --shape says otherwise)? For each type and each of three prompts, llama.cpp
# (../shared/peer) decodes 64 greedy steps and reports its top-10 at each;
# kvmesh_logit_agreement runs the same tokens (teacher forcing) and compares
# its argmax and its log-probabilities of llama.cpp's top-10 at every step.
# Prints a markdown table: top-1 agreement, the first step that disagrees,
# and the largest |d logprob| (absolute, and relative to llama.cpp's).
#
# Next to it, the noise floor of the comparison: llama.cpp against itself
# with flash attention on (the same weights and tokens; only the order and
# precision of the attention arithmetic change), as the first step where the
# two greedy paths part and the largest |d logprob| of the top-10 before it;
# llama.cpp against itself with nothing changed but the batching
# (bench/peer_self_agreement.mjs): its top-1 when the same tokens go through
# one batch (teacher forcing, as kvmesh is measured) against its own greedy
# decode, and the first step where its greedy path parts when the prompt goes
# through a batch size of 1; and kvmesh against itself with an f32 instead of
# an f16 KV cache.
#
#   bench/synthetic_agreement.sh [--types "q8_0 q4_0 q4_k_m f16"] [--steps 64]
#       [--shape llama-1b]   (any `kvmesh synth` shape, e.g. qwen3-moe-tiny)
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
SHAPE=llama-1b
while [ $# -gt 0 ]; do
  case "$1" in
    --types) TYPES=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --shape) SHAPE=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
KVMESH=$BUILD/cli/kvmesh
AGREE=$BUILD/bench/kvmesh_logit_agreement
PROMPTS=("The quick brown fox" "Once upon a time, in a small village" "def fibonacci(n):")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$MODELS"

echo "| model | prompt | top-1 agreement | first disagreement | max abs d logprob | max rel d logprob |" \
  "llama.cpp vs llama.cpp --fa: first split, max abs d logprob |" \
  "llama.cpp batch vs its decode: top-1, max abs d logprob | llama.cpp batch size 1: first split |" \
  "kvmesh f16 vs f32 KV: top-1, max abs d logprob |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for type in $TYPES; do
  f=$MODELS/$SHAPE-$type.gguf
  [ -f "$f" ] || "$KVMESH" synth --shape "$SHAPE" --type "$type" -o "$f" >&2
  for prompt in "${PROMPTS[@]}"; do
    (cd "$NLC_DIR" && node "$PEER" topk --model "$f" --prompt "$prompt" --steps "$STEPS" -k 10 \
      --threads 2) > "$TMP/peer.json" 2>/dev/null
    (cd "$NLC_DIR" && node "$PEER" topk --model "$f" --prompt "$prompt" --steps "$STEPS" -k 10 \
      --threads 2 --fa) > "$TMP/peer_fa.json" 2>/dev/null
    (cd "$NLC_DIR" && node "$ROOT/bench/peer_self_agreement.mjs" --model "$f" --prompt "$prompt" \
      --steps "$STEPS" --threads 2) > "$TMP/peer_self.json" 2>/dev/null
    "$AGREE" -m "$f" --peer-json "$TMP/peer.json" -t 2 --dump "$TMP/ours_f16.json" > "$TMP/ours.json"
    "$AGREE" -m "$f" --peer-json "$TMP/peer.json" -t 2 --kv-type f32 --dump "$TMP/ours_f32.json" \
      > /dev/null
    python3 - "$TMP" "$SHAPE $type" "$prompt" <<'PY'
import json, sys
tmp = sys.argv[1]
d = json.loads(open(f"{tmp}/ours.json").read().strip().splitlines()[-1])
first = d["first_disagreement"]
# llama.cpp against itself: greedy paths compared up to where they part.
a = json.load(open(f"{tmp}/peer.json"))["steps"]
b = json.load(open(f"{tmp}/peer_fa.json"))["steps"]
split = next((i for i, (x, y) in enumerate(zip(a, b)) if x["argmax"] != y["argmax"]), None)
before = zip(a, b) if split is None else zip(a[:split], b[:split])
peer_d = max((abs(x["logprob"] - y["logprob"]) for sa, sb in before
              for x, y in zip(sa["top"], sb["top"]) if x["token"] == y["token"]), default=0.0)
# kvmesh against itself: the same teacher-forced tokens, f16 and f32 KV.
f16 = json.load(open(f"{tmp}/ours_f16.json"))
f32 = json.load(open(f"{tmp}/ours_f32.json"))
self_d = max(abs(x - y) for r, q in zip(f16, f32) for x, y in zip(r, q))
self_top = sum(r.index(max(r)) == q.index(max(q)) for r, q in zip(f16, f32))
# llama.cpp against itself: one batch against its decode, and batch size 1.
s = json.loads(open(f"{tmp}/peer_self.json").read().strip().splitlines()[-1])
ub1 = "none" if s["ubatch1_first_split"] < 0 else s["ubatch1_first_split"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d['top1_agree']}/{d['steps']} | "
      f"{'none' if first < 0 else first} | {d['max_abs_dlogprob']:.4f} | {d['max_rel_dlogprob']:.4f} | "
      f"{'none' if split is None else split}, {peer_d:.4f} | "
      f"{s['batch_top1_agree']}/{s['steps']}, {s['batch_max_abs_dlogprob']:.4f} | {ub1} | "
      f"{self_top}/{len(f16)}, {self_d:.4f} |")
PY
  done
done
