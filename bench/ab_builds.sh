#!/usr/bin/env bash
# Two kvmesh builds against each other on the same models, alternating runs so
# both see the same machine: the check that a change costs no speed.
#
#   bench/ab_builds.sh BASE_BUILD NEW_BUILD [--models "A.gguf B.gguf"]
#                      [--threads "1 2"] [--pp 128] [--tg 32] [--reps 3] [--rounds 3]
#                      [--new-args "--devices cpu:0"]
#
# Prints a markdown table of pp and tg tokens/s (medians over rounds of each
# run's median) and new / base. Default models: stories260K from ../shared and
# the synthetic llama-1b Q4_0 in MODELS (default ~/kvmesh-models).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n 2,11p "$0"; exit 2; }
BASE=$1 NEW=$2
shift 2
MODELS=${MODELS:-$HOME/kvmesh-models}
LIST="$ROOT/../shared/models/stories260K.gguf $MODELS/llama-1b-q4_0.gguf"
THREADS="1 2"
PP=128 TG=32 REPS=3 ROUNDS=3 NEW_ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --models) LIST=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --pp) PP=$2; shift 2 ;;
    --tg) TG=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --new-args) NEW_ARGS=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

echo "## $NEW against $BASE ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg); pp$PP / tg$TG, $REPS repetitions per run, $ROUNDS alternating rounds (base first, then new)"
echo
echo "| model | threads | base pp | new pp | pp new/base | base tg | new tg | tg new/base |"
echo "|---|---|---|---|---|---|---|---|"
for model in $LIST; do
  for t in $THREADS; do
    bpp=(); btg=(); npp=(); ntg=()
    for round in $(seq "$ROUNDS"); do
      "$BASE/cli/kvmesh" bench -m "$model" -p "$PP" -n "$TG" -t "$t" -r "$REPS" --json > "$TMP/b.json" 2>&1
      # shellcheck disable=SC2086
      "$NEW/cli/kvmesh" bench -m "$model" -p "$PP" -n "$TG" -t "$t" -r "$REPS" --json $NEW_ARGS > "$TMP/n.json" 2>&1
      bpp+=("$(json_get "$TMP/b.json" 'd["pp_tokens_per_s"]')"); btg+=("$(json_get "$TMP/b.json" 'd["tg_tokens_per_s"]')")
      npp+=("$(json_get "$TMP/n.json" 'd["pp_tokens_per_s"]')"); ntg+=("$(json_get "$TMP/n.json" 'd["tg_tokens_per_s"]')")
    done
    mbpp=$(median "${bpp[@]}"); mnpp=$(median "${npp[@]}"); mbtg=$(median "${btg[@]}"); mntg=$(median "${ntg[@]}")
    echo "| $(basename "$model" .gguf) | $t | $mbpp | $mnpp | $(ratio "$mnpp" "$mbpp" 3) | $mbtg | $mntg | $(ratio "$mntg" "$mbtg" 3) |"
  done
done
echo
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
