#!/usr/bin/env bash
# A model on one CPU device against the same model split over two devices,
# in one run, alternating the configurations so all see the same machine:
#
#   one device of 2 threads      kvmesh bench -t 2
#   layer split, 2 x 1 thread    --devices cpu:0,cpu:1 --split layer -t 1
#   tensor split, 2 x 1 thread   --devices cpu:0,cpu:1 --split tensor -t 1
#
# Prints a markdown table of prefill (pp) and decode (tg) tokens/s (medians
# over rounds of each run's median), each as a ratio to one device, and the
# share of the tensor split's time its devices spend in all-reduces (waiting
# for each other included). Then, unless --no-agreement, the teacher-forced
# agreement of each split with one device (kvmesh_split_agreement).
#
#   bench/split_bench.sh [--model FILE] [--pp 128] [--tg 16] [--reps 3] [--rounds 3]
#
# Default model: the synthetic llama-1b Q4_0 in MODELS (default
# ~/kvmesh-models), made with `kvmesh synth` if missing. BUILD: kvmesh build
# dir (default build). Takes about 10 minutes for llama-1b on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
MODELS=${MODELS:-$HOME/kvmesh-models}
MODEL=""
PP=128
TG=16
REPS=3
ROUNDS=3
AGREEMENT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --pp) PP=$2; shift 2 ;;
    --tg) TG=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --no-agreement) AGREEMENT=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
KVMESH=$BUILD/cli/kvmesh
AGREE=$BUILD/bench/kvmesh_split_agreement
for f in "$KVMESH" "$AGREE"; do
  [ -x "$f" ] || { echo "missing $f (build kvmesh, or set BUILD)" >&2; exit 1; }
done
if [ -z "$MODEL" ]; then
  mkdir -p "$MODELS"
  MODEL=$MODELS/llama-1b-q4_0.gguf
  [ -f "$MODEL" ] || "$KVMESH" synth --shape llama-1b --type q4_0 -o "$MODEL" >&2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

NAMES=("one device, 2 threads" "layer split, 2 devices x 1 thread" "tensor split, 2 devices x 1 thread")
ARGS=("-t 2" "--devices cpu:0,cpu:1 --split layer -t 1" "--devices cpu:0,cpu:1 --split tensor -t 1")
declare -A PPS TGS PPC TGC
for round in $(seq "$ROUNDS"); do
  for i in "${!NAMES[@]}"; do
    # shellcheck disable=SC2086
    "$KVMESH" bench -m "$MODEL" -p "$PP" -n "$TG" -r "$REPS" --json ${ARGS[$i]} > "$TMP/k.json" 2>&1 || {
      cat "$TMP/k.json" >&2; exit 1; }
    PPS[$i]="${PPS[$i]:-} $(json_get "$TMP/k.json" 'd["pp_tokens_per_s"]')"
    TGS[$i]="${TGS[$i]:-} $(json_get "$TMP/k.json" 'd["tg_tokens_per_s"]')"
    PPC[$i]="${PPC[$i]:-} $(json_get "$TMP/k.json" 'd["pp_comm_share"] * 100')"
    TGC[$i]="${TGC[$i]:-} $(json_get "$TMP/k.json" 'd["tg_comm_share"] * 100')"
  done
done

echo "## Split plans on CPU devices ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- model: $MODEL"
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- pp$PP / tg$TG, $REPS repetitions per run, $ROUNDS alternating rounds; cells are medians"
echo
echo "| configuration | pp t/s | pp vs one device | tg t/s | tg vs one device | pp time in all-reduce | tg time in all-reduce |"
echo "|---|---|---|---|---|---|---|"
# shellcheck disable=SC2086
base_pp=$(median ${PPS[0]}); base_tg=$(median ${TGS[0]})
for i in "${!NAMES[@]}"; do
  # shellcheck disable=SC2086
  pp=$(median ${PPS[$i]}); tg=$(median ${TGS[$i]})
  comm="-"; comm_tg="-"
  if [ "$i" = 2 ]; then
    # shellcheck disable=SC2086
    comm="$(median ${PPC[$i]})%"; comm_tg="$(median ${TGC[$i]})%"
  fi
  echo "| ${NAMES[$i]} | $pp | $(ratio "$pp" "$base_pp") | $tg | $(ratio "$tg" "$base_tg") | $comm | $comm_tg |"
done
if [ "$AGREEMENT" = 1 ]; then
  echo
  echo "Teacher forcing, 512 positions in prefill chunks of 128, against one device:"
  echo
  "$AGREE" -m "$MODEL" -n 512 --chunk 128 \
    --plans "cpu:0,cpu:1/layer cpu:0,cpu:1,cpu:2/layer cpu:0,cpu:1/tensor cpu:0,cpu:1,cpu:2,cpu:3/tensor" |
    python3 -c 'import json,sys
for line in sys.stdin:
    d = json.loads(line)
    same = "yes" if d["bit_identical"] else "no"
    print("- %s split over %s: top-1 %d/%d, bit-identical %s, max |d logit| %.3g, "
          "largest top-1 margin where they disagree %.3g"
          % (d["split"], d["devices"], d["top1_agree"], d["positions"], same, d["max_abs_dlogit"],
             d["max_margin_at_disagreement"]))'
fi
