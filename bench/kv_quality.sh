#!/usr/bin/env bash
# KV cache quality against an f16 cache: perplexity, mean KL divergence and
# same-top-token rate for every storage type and K/V transform, in
# llama-perplexity's convention (docs/kv-cache.md has the results).
#
#   bench/kv_quality.sh [-m MODEL] [-f TEXT] [-c CTX] [-t THREADS] [-b KVMESH] [-o OUTDIR]
#
# Steps: (1) a calibration text sampled from the model itself (48 seeded
# samples, so the K means are not measured on the evaluation text), (2)
# `kvmesh kv-calibrate` on it, (3) the f16-cache base run with --save-logits,
# (4) one `kvmesh perplexity --kl-base` run per configuration. Prints a
# markdown table; the raw JSON lines go to OUTDIR/results.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
model="$here/../shared/models/tinystories-d64.gguf"
text="$here/../shared/models/tinystories-eval.txt"
ctx=256
threads=2
kvmesh="$here/build/cli/kvmesh"
out="${TMPDIR:-/tmp}/kvmesh-kv-quality"
while getopts "m:f:c:t:b:o:" opt; do
  case "$opt" in
    m) model="$OPTARG" ;;
    f) text="$OPTARG" ;;
    c) ctx="$OPTARG" ;;
    t) threads="$OPTARG" ;;
    b) kvmesh="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
[[ -x "$kvmesh" ]] || { echo "no kvmesh binary at $kvmesh (build it, or pass -b)" >&2; exit 1; }
mkdir -p "$out"
results="$out/results.jsonl"
: > "$results"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

# 1. Calibration text: the model's own stories, seeded and reproducible.
calib="$out/calibration.txt"
t0=$(now)
if [[ ! -s "$calib" ]]; then
  openings=("Once upon a time" "One day" "Tom" "The little" "Lily" "There was a" "Sam and" "The sun")
  : > "$calib.tmp"
  for seed in $(seq 1 48); do
    opening="${openings[$(( (seed - 1) % ${#openings[@]} ))]}"
    "$kvmesh" run -m "$model" -p "$opening" -n 250 --temp 0.9 --seed "$seed" -c "$ctx" \
        -t "$threads" --json 2>/dev/null | tail -1 |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(sys.argv[1] + j["text"])' \
        "$opening" >> "$calib.tmp"
  done
  mv "$calib.tmp" "$calib"
fi
echo "calibration text: $(wc -c < "$calib") bytes, 48 samples ($(elapsed "$t0" "$(now)") s)" >&2

# 2. K means.
t0=$(now)
"$kvmesh" kv-calibrate -m "$model" -f "$calib" -o "$out/k.bias" -c "$ctx" -t "$threads" >&2
echo "kv-calibrate: $(elapsed "$t0" "$(now)") s" >&2

# 3. Base: f16 cache.
ppl() {
  "$kvmesh" perplexity -m "$model" -f "$text" -c "$ctx" -t "$threads" --json "$@" 2>/dev/null |
    tail -1
}
t0=$(now)
base_json=$(ppl --save-logits "$out/base.logp")
echo "base (f16): $(elapsed "$t0" "$(now)") s" >&2

# 4. One run per configuration: label | flags.
configs=(
  "f32|--kv-type f32"
  "bf16|--kv-type bf16"
  "q8_0 plain|--kv-type q8_0 --kv-no-rotate"
  "q8_0, K and V rotated (the default; llama.cpp's q8_0)|--kv-type q8_0"
  "q8_0, K centered + rotated, V rotated|--kv-type q8_0 --kv-bias $out/k.bias"
  "q4_0 plain, reference rounding|--kv-type q4_0 --kv-rounding reference --kv-no-rotate"
  "q4_0, K and V rotated, reference rounding (llama.cpp's q4_0)|--kv-type q4_0 --kv-rounding reference"
  "q4_0 plain|--kv-type q4_0 --kv-no-rotate"
  "q4_0, K centered|--kv-type q4_0 --kv-no-rotate --kv-bias $out/k.bias"
  "q4_0, K rotated|--kv-type q4_0 --kv-no-rotate --kv-rotate"
  "q4_0, K centered + rotated|--kv-type q4_0 --kv-no-rotate --kv-bias $out/k.bias --kv-rotate"
  "q4_0, K and V rotated (the default)|--kv-type q4_0"
  "q4_0, K centered + rotated, V rotated|--kv-type q4_0 --kv-bias $out/k.bias"
  "K q4_0 plain, V f16|--kv-type-k q4_0 --kv-type-v f16 --kv-no-rotate"
  "K q4_0 centered, V f16|--kv-type-k q4_0 --kv-type-v f16 --kv-no-rotate --kv-bias $out/k.bias"
  "K q4_0 rotated, V f16|--kv-type-k q4_0 --kv-type-v f16"
  "K q4_0 centered + rotated, V f16|--kv-type-k q4_0 --kv-type-v f16 --kv-bias $out/k.bias"
  "q3_nl plain|--kv-type q3_nl --kv-no-rotate"
  "q3_nl, K centered|--kv-type q3_nl --kv-no-rotate --kv-bias $out/k.bias"
  "q3_nl, K and V rotated (the default)|--kv-type q3_nl"
  "q3_nl, K centered + rotated, V rotated|--kv-type q3_nl --kv-bias $out/k.bias"
  "K q8_0, V q3_nl, rotated|--kv-type-k q8_0 --kv-type-v q3_nl"
  "K q8_0 centered + rotated, V q3_nl rotated|--kv-type-k q8_0 --kv-type-v q3_nl --kv-bias $out/k.bias"
  "K q4_0 centered + rotated, V q3_nl rotated|--kv-type-k q4_0 --kv-type-v q3_nl --kv-bias $out/k.bias"
)
# A table row from one JSON result (argv: label).
cat > "$out/row.py" <<'PY'
import json, sys
j = json.load(sys.stdin)
label = sys.argv[1]
if "kl_mean" in j:
    kl = f"{j['kl_mean']:.6f} ± {j['kl_mean_error']:.6f}"
    top = f"{100 * j['same_top_p']:.2f} ± {100 * j['same_top_p_error']:.2f} %"
else:
    kl = top = "(base)"
kv_type = j['kv']['type'] + (" (ref. rounding)" if j['kv'].get('rounding') == "reference" else "")
print(f"| {label} | {kv_type} | {j['kv']['bytes_per_token']} | "
      f"{j['ppl']:.4f} ± {j['ppl_error']:.4f} | {kl} | {top} | {j['seconds']:.2f} |")
PY
echo "| configuration | KV type | bytes/token | PPL | mean KL | same top | seconds |"
echo "|---|---|---|---|---|---|---|"
echo "$base_json" | python3 "$out/row.py" "f16 (base)"
echo "{\"label\":\"f16 (base)\",\"result\":$base_json}" >> "$results"
for entry in "${configs[@]}"; do
  label="${entry%%|*}"
  read -r -a flags <<< "${entry#*|}"
  json=$(ppl "${flags[@]}" --kl-base "$out/base.logp")
  echo "{\"label\":\"$label\",\"result\":$json}" >> "$results"
  echo "$json" | python3 "$out/row.py" "$label"
done
