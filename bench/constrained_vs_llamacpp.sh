#!/usr/bin/env bash
# The cost of JSON-schema constrained decoding, kvmesh against native
# llama.cpp on the same model file and schema (bench/constrained_schema.json):
# per-token generation time with the schema over without it, at one stream
# (both) and 16 streams (kvmesh; llama-completion runs one sequence). The
# runs alternate kvmesh and llama.cpp, constrained and not; medians of RUNS.
#
#   bench/constrained_vs_llamacpp.sh MODEL.gguf LLAMA_BUILD_DIR [RUNS=3] [TOKENS=48]
#
# llama.cpp: llama-completion -t 2 --temp 1 --top-k 40 --top-p 0.95 --min-p 0.05
# --seed S [-j SCHEMA] (kvmesh samples with the same settings); its per-token
# time is (eval time + sampling time) / generated tokens, from its own report.
set -euo pipefail
model="$1"; llama="$2"; runs="${3:-3}"; tokens="${4:-48}"
here="$(cd "$(dirname "$0")" && pwd)"
build="${BUILD_DIR:-$here/../build}"
schema="$here/constrained_schema.json"
prompt="Write a list of pets as JSON. Pet 0:"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

llama_ms_per_token() {  # $1: seed, $2…: extra args; prints ms per generated token
  "$llama/bin/llama-completion" -m "$model" -p "$prompt" -n "$tokens" -t 2 --temp 1 --top-k 40 \
    --top-p 0.95 --min-p 0.05 --seed "$1" \
    -no-cnv --no-warmup "${@:2}" >"$tmp/out" 2>"$tmp/err" </dev/null || { cat "$tmp/err" >&2; exit 1; }
  awk '/sampling time =/ {match($0, /= *[0-9.]+/); s = substr($0, RSTART + 1, RLENGTH - 1) + 0}
       / eval time =/ && !/prompt eval/ {
         match($0, /= *[0-9.]+ ms \/ *[0-9]+/); split(substr($0, RSTART + 1, RLENGTH - 1), a, " ")
         e = a[1]; n = a[4]}
       END {printf "%.3f\n", (e + s) / n}' "$tmp/err"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) before the runs"
: >"$tmp/lp"; : >"$tmp/lc"
for run in $(seq 1 "$runs"); do
  llama_ms_per_token "$run" --ignore-eos >>"$tmp/lp"
  llama_ms_per_token "$run" -j "$(tr -d '\n' <"$schema")" >>"$tmp/lc"
done
lp=$(median <"$tmp/lp"); lc=$(median <"$tmp/lc")
echo "llama.cpp, 1 stream: $lp ms/token unconstrained, $lc ms/token with the schema," \
     "ratio $(awk -v a="$lc" -v b="$lp" 'BEGIN {printf "%.3f", a/b}')"
"$build/bench/kvmesh_constrained_bench" "$model" "$schema" --tokens "$tokens" --runs "$runs"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) after"
