#!/usr/bin/env bash
# kvmesh's CPU engine against llama.cpp (../shared/peer, node-llama-cpp) on the
# same GGUF files, the same thread counts, in one run, alternating the two so
# both see the same machine. Prints a markdown table of prompt-processing
# (pp) and generation (tg) tokens/s, the ratios kvmesh / llama.cpp, and the
# decode roofline: a read-bandwidth probe's GB/s divided by the bytes of
# weights read per token, against the achieved tg.
#
#   bench/cpu_vs_llamacpp.sh [--pp 128] [--tg 32] [--reps 3] [--rounds 3]
#                            [--threads "1 2"] [--types "q8_0 q4_0 q4_k_m f16"]
#                            [--shape llama-1b]  (any `kvmesh synth` shape, e.g. qwen3-moe-5b)
#
# Environment: BUILD (kvmesh build dir, default build), MODELS (where the
# synthetic llama-1b files are kept or made with `kvmesh synth`, default
# ~/kvmesh-models), SHARED (default ../shared), NLC_DIR (node-llama-cpp
# install, default ~/nlc; see the peer's header), LLAMA_BENCH (a native
# llama.cpp build's llama-bench: when set it is the peer instead of
# node-llama-cpp; ../shared/TOOLS.md, section P, says how to build it).
#
# Each round runs `kvmesh bench -r REPS` then the peer's bench with the same
# settings; a cell is the median over rounds of each tool's median. Medians,
# because the 2-core machine this targets is shared: the load average before
# and after is printed, and llama.cpp's own 2-thread decode collapses when
# anything else runs (trust -t 1 for decode then).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
MODELS=${MODELS:-$HOME/kvmesh-models}
SHARED=${SHARED:-$ROOT/../shared}
NLC_DIR=${NLC_DIR:-$HOME/nlc}
PEER=$SHARED/peer/llamacpp_peer.mjs
PP=128
TG=32
REPS=3
ROUNDS=3
THREADS="1 2"
TYPES="q8_0 q4_0 q4_k_m f16"
SHAPE=llama-1b
while [ $# -gt 0 ]; do
  case "$1" in
    --pp) PP=$2; shift 2 ;;
    --shape) SHAPE=$2; shift 2 ;;
    --tg) TG=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --types) TYPES=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

KVMESH=$BUILD/cli/kvmesh
PROBE=$BUILD/bench/kvmesh_bandwidth_probe
LLAMA_BENCH=${LLAMA_BENCH:-}
for f in "$KVMESH" "$PROBE" ${LLAMA_BENCH:-"$PEER"}; do
  [ -e "$f" ] || { echo "missing $f (build kvmesh, or set BUILD / SHARED / LLAMA_BENCH)" >&2; exit 1; }
done
if [ -z "$LLAMA_BENCH" ]; then
  [ -d "$NLC_DIR/node_modules/node-llama-cpp" ] || {
    echo "node-llama-cpp not found in $NLC_DIR (see the header of $PEER)" >&2; exit 1; }
fi
# peer_bench MODEL THREADS OUT: the peer's pp and tg medians as {"pp": x, "tg": y}.
peer_bench() {
  if [ -n "$LLAMA_BENCH" ]; then
    "$LLAMA_BENCH" -m "$1" -p "$PP" -n "$TG" -t "$2" -r "$REPS" -o json 2>/dev/null |
      python3 -c 'import json,statistics,sys
rows=json.load(sys.stdin); d={}
for r in rows: d["pp" if r["n_gen"]==0 else "tg"]=statistics.median(r["samples_ts"])
print(json.dumps(d))' > "$3"
  else
    (cd "$NLC_DIR" && node "$PEER" bench --model "$1" --pp "$PP" --tg "$TG" -r "$REPS" \
      --threads "$2") 2>/dev/null | python3 -c 'import json,sys
line=[l for l in sys.stdin if l.startswith("{")][-1]; d=json.loads(line)
print(json.dumps({"pp": d["pp'"$PP"'"]["median"], "tg": d["tg'"$TG"'"]["median"]}))' > "$3"
  fi
}
PEER_NAME=$([ -n "$LLAMA_BENCH" ] && echo "native llama.cpp ($LLAMA_BENCH)" || echo "node-llama-cpp")
mkdir -p "$MODELS"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# Models: stories260K from ../shared, the shape synthesized once per type.
declare -a NAMES FILES
NAMES+=("stories260K"); FILES+=("$SHARED/models/stories260K.gguf")
for type in $TYPES; do
  f=$MODELS/$SHAPE-$type.gguf
  if [ ! -f "$f" ]; then
    echo "synthesizing $f ..." >&2
    "$KVMESH" synth --shape "$SHAPE" --type "$type" -o "$f" >&2
  fi
  NAMES+=("$SHAPE $type"); FILES+=("$f")
done

echo "## CPU kernels vs llama.cpp ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "- peer: $PEER_NAME"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PROBE" --mib 2048 --repetitions 7 --threads 1,2 --json > "$TMP/probe.json"
BW1=$(json_get "$TMP/probe.json" 'd["read_gbps"]["1"]')
BW2=$(json_get "$TMP/probe.json" 'd["read_gbps"]["2"]')
echo "- read bandwidth ($(json_get "$TMP/probe.json" 'd["loop"]') probe, 2 GiB, median of 7): $BW1 GB/s on 1 thread, $BW2 GB/s on 2 at the start;"
echo "  each round re-measures it (1 GiB, median of 5) just before kvmesh runs, and tg / roofline is"
echo "  the median over rounds of kvmesh's tg divided by that round's roofline"
echo "- pp$PP / tg$TG, $REPS repetitions per run, $ROUNDS alternating rounds; cells are medians"
echo
echo "| model | threads | kvmesh pp | llama.cpp pp | pp ratio | kvmesh tg | llama.cpp tg | tg ratio | MiB/token | roofline t/s | tg / roofline |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]}
  file=${FILES[$i]}
  for t in $THREADS; do
    kpp=(); ktg=(); lpp=(); ltg=(); roofs=(); fracs=(); bpt=0
    for round in $(seq "$ROUNDS"); do
      # The machine's bandwidth drifts (shared host): each round measures its
      # own roofline right before kvmesh's run.
      "$PROBE" --mib 1024 --repetitions 5 --threads "$t" --json > "$TMP/p.json"
      bw=$(json_get "$TMP/p.json" "d['read_gbps']['$t']")
      "$KVMESH" bench -m "$file" -p "$PP" -n "$TG" -t "$t" -r "$REPS" --json > "$TMP/k.json" 2>&1
      kpp+=("$(json_get "$TMP/k.json" 'd["pp_tokens_per_s"]')")
      ktg+=("$(json_get "$TMP/k.json" 'd["tg_tokens_per_s"]')")
      bpt=$(json_get "$TMP/k.json" 'd["bytes_per_token"]')
      roofs+=("$(python3 -c "print($bw * 1e9 / $bpt)")")
      echo "$name -t $t round $round: probe $bw GB/s" >> "$TMP/probes.txt"
      fracs+=("$(python3 -c "print(${ktg[-1]} / ${roofs[-1]})")")
      peer_bench "$file" "$t" "$TMP/l.json"
      lpp+=("$(json_get "$TMP/l.json" 'd["pp"]')")
      ltg+=("$(json_get "$TMP/l.json" 'd["tg"]')")
    done
    mkpp=$(median "${kpp[@]}"); mktg=$(median "${ktg[@]}")
    mlpp=$(median "${lpp[@]}"); mltg=$(median "${ltg[@]}")
    roof=$(median "${roofs[@]}")
    echo "| $name | $t | $mkpp | $mlpp | $(ratio "$mkpp" "$mlpp") | $mktg | $mltg | $(ratio "$mktg" "$mltg") | $(python3 -c "print(f'{$bpt / 1048576:.1f}')") | $roof | $(median "${fracs[@]}") |"
  done
done
echo
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/probes.txt" <<'PY'
import sys
by = {}
for line in open(sys.argv[1]):
    threads = line.split(" -t ")[1].split()[0]
    by.setdefault(threads, []).append(float(line.split("probe ")[1].split()[0]))
for t, v in sorted(by.items()):
    print(f"- per-round probe, {t} thread(s): {min(v):.2f}-{max(v):.2f} GB/s over {len(v)} rounds")
PY
