#!/usr/bin/env bash
# `kvmesh run` next to llama.cpp (../shared/peer, node-llama-cpp) on the same
# model, prompt and thread count, alternating the two in one run.
#
#   bench/run_vs_llamacpp.sh [--n 128] [--rounds 5] [--threads 1]
#                            [--prompt TEXT] [MODEL ...]
#
# Per model it checks first that both produce the same greedy tokens for the
# prompt, then runs ROUNDS rounds of: `kvmesh run --temp 0 --json` (its
# prompt and generation tokens/s), then the peer's bench with the same prompt
# length and token count (the peer's `generate` reports no timings; its bench
# prompt is synthetic tokens of that length and its decode starts after BOS,
# its median of 3 repetitions per round is taken). Prints a
# markdown table of medians and the ratios kvmesh / llama.cpp, with the load
# average before and after.
#
# Environment: BUILD (default build), SHARED (default ../shared), NLC_DIR
# (node-llama-cpp install, default ~/nlc; see the peer's header).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SHARED=${SHARED:-$ROOT/../shared}
NLC_DIR=${NLC_DIR:-$HOME/nlc}
PEER=$SHARED/peer/llamacpp_peer.mjs
N=128
ROUNDS=5
THREADS=1
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
MODELS_LIST=()
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --prompt) PROMPT=$2; shift 2 ;;
    -*) echo "unknown argument $1" >&2; exit 2 ;;
    *) MODELS_LIST+=("$1"); shift ;;
  esac
done
[ ${#MODELS_LIST[@]} -gt 0 ] || MODELS_LIST=("$SHARED/models/stories260K.gguf" "$SHARED/models/tinystories-d64.gguf")
KVMESH=$BUILD/cli/kvmesh
for f in "$KVMESH" "$PEER" "${MODELS_LIST[@]}"; do
  [ -e "$f" ] || { echo "missing $f (build kvmesh, or set BUILD / SHARED)" >&2; exit 1; }
done
[ -d "$NLC_DIR/node_modules/node-llama-cpp" ] || {
  echo "node-llama-cpp not found in $NLC_DIR (see the header of $PEER)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

last_json() { grep '^{' "$1" | tail -1; }
median() { python3 -c 'import statistics,sys; print("%.1f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "prompt: \"$PROMPT\", $N greedy tokens, $THREADS thread(s), $ROUNDS alternating rounds"
echo
echo "| model | prompt tokens | same tokens | kvmesh prompt t/s | llama.cpp pp t/s | ratio | kvmesh gen t/s | llama.cpp tg t/s | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in "${MODELS_LIST[@]}"; do
  "$KVMESH" run -m "$model" -p "$PROMPT" -n "$N" --temp 0 -t "$THREADS" --json > "$TMP/k.out" 2> "$TMP/k.err"
  (cd "$NLC_DIR" && node "$PEER" generate --model "$model" --prompt "$PROMPT" -n "$N" --threads "$THREADS") \
    > "$TMP/p.out" 2> "$TMP/p.err"
  read -r n_prompt same < <(python3 - "$TMP/k.out" "$TMP/p.out" <<'EOF'
import json, sys
k = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
p = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][-1]
same = k["prompt_tokens"] == p["prompt_tokens"] and k["tokens"] == p["generated_tokens"]
a, b = k["tokens"], p["generated_tokens"]
first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
why = "prompt tokens differ" if k["prompt_tokens"] != p["prompt_tokens"] else \
      "first %d of %d/%d equal" % (first, len(a), len(b))
print(len(k["prompt_tokens"]), "yes" if same else "no: " + why)
EOF
  )
  k_pp=(); k_tg=(); p_pp=(); p_tg=()
  for ((r = 0; r < ROUNDS; ++r)); do
    "$KVMESH" run -m "$model" -p "$PROMPT" -n "$N" --temp 0 -t "$THREADS" --json > "$TMP/k.out" 2> /dev/null
    read -r a b < <(last_json "$TMP/k.out" | python3 -c 'import json,sys; t=json.load(sys.stdin)["timings"]; print(t["prompt_tokens_per_s"], t["gen_tokens_per_s"])')
    k_pp+=("$a"); k_tg+=("$b")
    (cd "$NLC_DIR" && node "$PEER" bench --model "$model" --pp "$n_prompt" --tg "$N" -r 3 --threads "$THREADS") \
      > "$TMP/p.out" 2> /dev/null
    read -r a b < <(last_json "$TMP/p.out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["pp'"$n_prompt"'"]["median"], d["tg'"$N"'"]["median"])')
    p_pp+=("$a"); p_tg+=("$b")
  done
  kp=$(median "${k_pp[@]}"); kt=$(median "${k_tg[@]}")
  pp=$(median "${p_pp[@]}"); pt=$(median "${p_tg[@]}")
  echo "| $(basename "$model" .gguf) | $n_prompt | $same | $kp | $pp | $(python3 -c "print('%.2f' % ($kp / $pp))") | $kt | $pt | $(python3 -c "print('%.2f' % ($kt / $pt))") |"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
