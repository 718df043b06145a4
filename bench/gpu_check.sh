#!/usr/bin/env bash
# One command on a bare GPU machine that proves the CUDA executor and times
# it (about 9 minutes on one H200, most of it in the 8B shape):
#   1. builds the device build (-DKVMESH_DEVICE_BUILD=ON: kernels, model,
#      runtime, the CUDA tests, kvmesh_gpu_bench) for CUDA_ARCH (90: H100,
#      H200), every core;
#   2. runs every CUDA kernel's parity test against the CPU reference
#      (cuda_block_math_test, cuda_kernels_test), the executor against the
#      CPU executor, greedy decode included, with both splits on two virtual
#      devices (cuda_executor_test), and llama.cpp's golden outputs on the GPU
#      (golden_model_test's GoldenGpuTest: greedy generations token for
#      token, both splits, teacher forcing);
#   3. meanwhile synthesizes llama-1b and llama-8b in Q4_0, Q8_0, Q4_K_M and
#      F16 on the CPU, then times prefill (pp512), batch-1 decode and
#      16-stream decode on each against a device copy-bandwidth probe, and
#      the two splits of llama-1b Q4_0 on virtual devices;
#   4. prints one table and writes everything to $OUT (or
#      /tmp/kvmesh-gpu-check): summary.txt, table.md, bench.jsonl, the logs;
#   5. with GPU_CHECK_PEER=1, builds llama.cpp's CUDA backend from the
#      sources gpu_check_prepare.sh packed and times it on the same files
#      (pp, tg1, tg16), for a table of ratios (built here, not carried: its
#      CUDA library alone is 67 MB, 45 MB compressed, past what a run
#      carries; the timings wait for the build, so as not to share the cores
#      with it, and the call must leave it the minutes);
#   6. with GPU_CHECK_GRAPHS=1, times each single-GPU model again with decode
#      steps replayed from CUDA graphs (KVMESH_CUDA_GRAPHS=on), with
#      GPU_CHECK_LONG_CTX=N, with decode after N-token prompts, and with
#      GPU_CHECK_MATVEC_ROWS=N, with the mat-vecs taking steps of up to N rows;
#   7. with GPU_CHECK_PROFILE=1, times every kernel of a llama-1b prefill and
#      decode under Nsight Compute and splits a decode step into kernel time
#      and the gaps between kernels (bench/gpu_profile_summary.py).
# Where the machine has no ../shared and none of the packages, run
# bench/gpu_check_prepare.sh here first and carry .gpu-check/.
# Exit status: the number of failed test binaries (0: all passed).
#   [CUDA_ARCH=90] [GPU_CHECK_SHAPES="llama-1b llama-8b"]
#   [GPU_CHECK_TYPES="q4_0 q8_0 q4_k_m f16"] bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ARCH=${CUDA_ARCH:-90}
RESULTS=${OUT:-/tmp/kvmesh-gpu-check}
MODELS=${GPU_CHECK_MODELS:-/tmp/kvmesh-gpu-models}
SHAPES=${GPU_CHECK_SHAPES:-"llama-1b llama-8b"}
TYPES=${GPU_CHECK_TYPES:-"q4_0 q8_0 q4_k_m f16"}
PP=${GPU_CHECK_PP:-512}
TG=${GPU_CHECK_TG:-32}
STREAMS=${GPU_CHECK_STREAMS:-16}
B=${GPU_CHECK_BUILD:-build-gpu}
PREP=$ROOT/.gpu-check
if [ -n "${KVMESH_SHARED:-}" ]; then
  SHARED=$KVMESH_SHARED
elif [ -d "$PREP/shared" ]; then
  SHARED=$PREP/shared
else
  SHARED=$(cd .. && pwd)/shared
fi
mkdir -p "$RESULTS" "$MODELS"
: >"$RESULTS/summary.txt"
START=$SECONDS
log() { printf '[gpu_check %4ds] %s\n' $((SECONDS - START)) "$*" | tee -a "$RESULTS/summary.txt"; }

if command -v nvidia-smi >/dev/null; then
  log "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
else
  log "no nvidia-smi on this machine"
fi
log "shared data: $SHARED; $(nproc) cores"

# 1. Build.
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DKVMESH_DEVICE_BUILD=ON -DKVMESH_CUDA=ON
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DKVMESH_SHARED_DIR="$SHARED")
if [ -d "$PREP/deps" ]; then
  args+=(-DCMAKE_PREFIX_PATH="$PREP/deps" -DOPENSSL_ROOT_DIR="$PREP/deps"
    -DKVMESH_GTEST_SOURCE_DIR="$PREP/deps/googletest")
  export LD_LIBRARY_PATH="$PREP/deps/lib:${LD_LIBRARY_PATH:-}"
elif [ -d /usr/src/googletest ] && ! [ -d /usr/lib/x86_64-linux-gnu/cmake/GTest ]; then
  args+=(-DKVMESH_GTEST_SOURCE_DIR=/usr/src/googletest)
fi
if ! cmake -S . -B "$B" "${args[@]}" >"$RESULTS/configure.log" 2>&1; then
  tail -30 "$RESULTS/configure.log"
  log "configure failed"
  exit 100
fi
if ! cmake --build "$B" --parallel "$(nproc)" --target cuda_block_math_test cuda_kernels_test \
  cuda_executor_test golden_model_test kvmesh_gpu_bench >"$RESULTS/build.log" 2>&1; then
  grep -E "error|FAILED" -A5 "$RESULTS/build.log" | head -60
  log "build failed"
  exit 101
fi
log "built for sm_$ARCH"

# 1b. The peer (GPU_CHECK_PEER=1, with .gpu-check/llama.cpp.tar.xz from
# bench/gpu_check_prepare.sh): llama.cpp's llama-bench and
# llama-batched-bench built with its CUDA backend for the same architecture,
# in the background while the tests run; the timings below wait for it.
PEER_BIN=
PEER_BUILD=
if [ "${GPU_CHECK_PEER:-0}" = 1 ] && [ -f "$PREP/llama.cpp.tar.xz" ]; then
  PEER_DIR=/tmp/kvmesh-gpu-peer
  (
    set -e
    rm -rf "$PEER_DIR" && mkdir -p "$PEER_DIR/src"
    tar xJf "$PREP/llama.cpp.tar.xz" -C "$PEER_DIR/src"
    cmake -S "$PEER_DIR/src" -B "$PEER_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF
    timeout "${GPU_CHECK_PEER_BUILD_S:-420}" ninja -C "$PEER_DIR/build" llama-bench llama-batched-bench
  ) >"$RESULTS/peer_build.log" 2>&1 &
  PEER_BUILD=$!
  log "building the peer (llama.cpp $(cat "$PREP/llama.cpp.commit" 2>/dev/null | cut -c1-12)) in the background"
fi

# 3a. Synthetic models, on the CPU, while the tests below use the GPU.
VOCAB=$SHARED/vocab/ggml-vocab-llama-bpe.gguf
(
  for shape in $SHAPES; do
    for type in $TYPES; do
      f=$MODELS/$shape-$type.gguf
      [ -f "$f" ] && continue
      "$B/bench/kvmesh_gpu_bench" synth --shape "$shape" --type "$type" --vocab "$VOCAB" \
        -o "$f.part" && mv "$f.part" "$f"
    done
  done
) >"$RESULTS/synth.log" 2>&1 &
SYNTH=$!

# 2. Tests.
FAILS=0
for t in worker/cuda_block_math_test worker/kernels/cuda/cuda_kernels_test worker/cuda_kernels_test \
  tests/cuda_executor_test tests/golden_model_test:GoldenGpuTest.*; do
  filter=${t#*:}
  [ "$filter" = "$t" ] && filter='*'
  t=${t%%:*}
  [ -x "$B/$t" ] || continue
  name=$(basename "$t")
  if "$B/$t" --gtest_color=no --gtest_filter="$filter" >"$RESULTS/$name.log" 2>&1; then
    log "PASS $name: $(grep -cE '^\[       OK \].*\([0-9]+ ms\)' "$RESULTS/$name.log") passed, $(grep -cE '^\[  SKIPPED \].*\([0-9]+ ms\)' "$RESULTS/$name.log") skipped"
  else
    FAILS=$((FAILS + 1))
    log "FAIL $name: $(grep -cE '^\[  FAILED  \].*\([0-9]+ ms\)' "$RESULTS/$name.log") failed"
    grep -E "Failure|FAILED|Expected|Which is|actual|error" "$RESULTS/$name.log" | head -60 |
      tee -a "$RESULTS/summary.txt"
  fi
done
grep -E "top-1" "$RESULTS/cuda_executor_test.log" 2>/dev/null | tee -a "$RESULTS/summary.txt"
grep -E "^\[ (greedy|logits|teacher forcing) \]" "$RESULTS/golden_model_test.log" 2>/dev/null |
  tee -a "$RESULTS/summary.txt"

# 3b. Timings, once the peer's build (if any) no longer takes the cores.
if [ -n "$PEER_BUILD" ]; then
  if wait "$PEER_BUILD"; then
    PEER_BIN=/tmp/kvmesh-gpu-peer/build/bin
    log "peer built"
  else
    log "peer build failed (see peer_build.log): timings without a peer"
    tail -20 "$RESULTS/peer_build.log" | tee -a "$RESULTS/summary.txt"
  fi
fi
# llama.cpp on the same file: pp and batch-1 tg by llama-bench, and one and
# STREAMS sequences of 16-token prompts decoding TG tokens by
# llama-batched-bench (kvmesh_gpu_bench's tg16); flash attention on, f16 KV.
peer_run() {
  [ -n "$PEER_BIN" ] || return 0
  local f=$1 name
  name=$(basename "$f" .gguf)
  "$PEER_BIN/llama-bench" -m "$f" -p "$PP" -n "$TG" -ngl 99 -fa on -r 3 -o jsonl \
    >"$RESULTS/peer-$name.jsonl" 2>>"$RESULTS/peer.log" || log "llama-bench failed on $f"
  "$PEER_BIN/llama-batched-bench" -m "$f" -ngl 99 -fa on -c $((STREAMS * (16 + TG) + 64)) \
    -npp 16 -ntg "$TG" -npl "1,$STREAMS" --output-format jsonl >"$RESULTS/peer-batched.log" 2>&1 ||
    log "llama-batched-bench failed on $f"
  grep '^{' "$RESULTS/peer-batched.log" >>"$RESULTS/peer-$name.jsonl"
  cat "$RESULTS/peer-batched.log" >>"$RESULTS/peer.log"
}
BENCH=$RESULTS/bench.jsonl
: >"$BENCH"
"$B/bench/kvmesh_gpu_bench" probe | tee -a "$BENCH"
BW=$(tail -1 "$BENCH" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gb_per_s"])' 2>/dev/null || echo 0)
log "copy bandwidth: $BW GB/s"
for shape in $SHAPES; do
  for type in $TYPES; do
    f=$MODELS/$shape-$type.gguf
    while [ ! -f "$f" ] && kill -0 "$SYNTH" 2>/dev/null; do sleep 1; done
    if [ ! -f "$f" ]; then
      log "no $f (see synth.log)"
      continue
    fi
    "$B/bench/kvmesh_gpu_bench" run -m "$f" --pp "$PP" --tg "$TG" --streams "$STREAMS" \
      --bandwidth "$BW" | tee -a "$BENCH" || log "bench failed on $f"
    peer_run "$f"
    if [ -n "${GPU_CHECK_LONG_CTX:-}" ]; then  # decode after long prompts
      "$B/bench/kvmesh_gpu_bench" run -m "$f" --pp "$PP" --tg "$TG" --streams "$STREAMS" \
        --ctx "$GPU_CHECK_LONG_CTX" --bandwidth "$BW" | tee -a "$BENCH" ||
        log "bench failed on $f (ctx $GPU_CHECK_LONG_CTX)"
    fi
    if [ -n "${GPU_CHECK_MATVEC_ROWS:-}" ]; then  # 16 streams through the mat-vecs
      KVMESH_CUDA_MATVEC_ROWS=$GPU_CHECK_MATVEC_ROWS "$B/bench/kvmesh_gpu_bench" run -m "$f" \
        --pp "$PP" --tg "$TG" --streams "$STREAMS" --bandwidth "$BW" | tee -a "$BENCH" ||
        log "bench failed on $f (mat-vecs to $GPU_CHECK_MATVEC_ROWS rows)"
    fi
    if [ "${GPU_CHECK_GRAPHS:-0}" = 1 ]; then  # batch-1 decode replayed from CUDA graphs
      KVMESH_CUDA_GRAPHS=on "$B/bench/kvmesh_gpu_bench" run -m "$f" --pp "$PP" --tg "$TG" \
        --streams "$STREAMS" --bandwidth "$BW" | tee -a "$BENCH" || log "bench failed on $f (graphs)"
    fi
    if [ "$shape-$type" = "llama-1b-q4_0" ]; then
      for split in layer tensor; do
        "$B/bench/kvmesh_gpu_bench" run -m "$f" --devices cuda:0.0,cuda:0.1 --split "$split" \
          --pp "$PP" --tg "$TG" --streams "$STREAMS" --bandwidth "$BW" | tee -a "$BENCH" ||
          log "bench failed on $f ($split split)"
      done
    fi
    [ -n "${GPU_CHECK_KEEP_MODELS:-}" ] || rm -f "$f"  # the disk holds a few 8B files only
  done
done
wait "$SYNTH"
tail -3 "$RESULTS/synth.log" >>"$RESULTS/summary.txt"

# 3c. Where a step's time goes (GPU_CHECK_PROFILE=1, when ncu can read the
# device's counters): every kernel of llama-1b Q4_0's pp512, its 16-token
# prefill and its batch-1 decode steps, timed one by one by Nsight Compute;
# each step starts at its embedding kernel. Against the step's wall time this
# splits a decode step into kernel time and the gaps between kernels (launch
# and host work). Bounded to GPU_CHECK_PROFILE_S seconds (180).
f=$MODELS/llama-1b-q4_0.gguf
if [ "${GPU_CHECK_PROFILE:-0}" = 1 ] && command -v ncu >/dev/null; then
  if [ ! -f "$f" ]; then
    "$B/bench/kvmesh_gpu_bench" synth --shape llama-1b --type q4_0 --vocab "$VOCAB" -o "$f" \
      >>"$RESULTS/synth.log" 2>&1
  fi
  timeout "${GPU_CHECK_PROFILE_S:-180}" ncu --clock-control none --cache-control none --csv \
    --print-units base \
    --launch-count 4000 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    "$B/bench/kvmesh_gpu_bench" run -m "$f" --pp 512 --tg 2 --streams 1 \
    >"$RESULTS/profile.csv" 2>"$RESULTS/profile.err"
  log "profile: ncu exit $?, $(grep -c '"gpu__time_duration.sum"' "$RESULTS/profile.csv") kernels"
  python3 "$ROOT/bench/gpu_profile_summary.py" "$RESULTS/profile.csv" "$BENCH" \
    2>&1 | tee -a "$RESULTS/summary.txt"
  # The mat-vecs of llama-8b Q4_0's one-token steps, by shape.
  f8=$MODELS/llama-8b-q4_0.gguf
  if [ -f "$f8" ]; then
    timeout 90 ncu --clock-control none --cache-control none --csv --print-units base \
      -k regex:MatVec --launch-count 448 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      "$B/bench/kvmesh_gpu_bench" run -m "$f8" --pp 1 --tg 2 --streams 1 \
      >"$RESULTS/profile8b.csv" 2>>"$RESULTS/profile.err"
    log "profile llama-8b mat-vecs: ncu exit $?"
    python3 "$ROOT/bench/gpu_profile_summary.py" --by-shape "$RESULTS/profile8b.csv" \
      2>&1 | tee -a "$RESULTS/summary.txt"
  fi
fi

# 3d. The kernels under compute-sanitizer's memcheck (GPU_CHECK_SANITIZE=1):
# the kernel parity tests and the executor on one model with a rotated q4_0
# cache, both splits included. Bounded to GPU_CHECK_SANITIZE_S seconds (120).
if [ "${GPU_CHECK_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  timeout "${GPU_CHECK_SANITIZE_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$B/worker/cuda_kernels_test" --gtest_color=no >"$RESULTS/memcheck.log" 2>&1
  rc_kernels=$?
  timeout "${GPU_CHECK_SANITIZE_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$B/tests/cuda_executor_test" --gtest_color=no --gtest_filter='*Q4_K_M*' \
    >>"$RESULTS/memcheck.log" 2>&1
  log "memcheck: kernels exit $rc_kernels, executor exit $? (0 clean, 9 errors found, 124 cut by time)"
  grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RESULTS/memcheck.log" | sort | uniq -c | head -20 |
    tee -a "$RESULTS/summary.txt"
fi

# 4. The table.
python3 - "$BENCH" "$RESULTS/table.md" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
bw = next((r["gb_per_s"] for r in rows if r.get("probe")), 0)
dev = next((r["device"] for r in rows if r.get("probe")), "?")
out = [f"GPU: {dev}; device-to-device copy {bw:.0f} GB/s", "",
       "| model | devices | pp t/s | tg1 t/s | tg1 GB/s | tg1 / copy BW | tg16 t/s | tg16 / tg1 |",
       "|---|---|---|---|---|---|---|---|"]
for r in rows:
    if "model" not in r:
        continue
    name = os.path.basename(r["model"]).replace(".gguf", "")
    devs = r["devices"] + ("" if r["split"] == "none" else f" ({r['split']})")
    devs += ", CUDA graphs" if r.get("cuda_graphs") else ""
    devs += f", mat-vecs to {r['matvec_rows']} rows" if r.get("matvec_rows", 8) != 8 else ""
    devs += f", decode after {r['ctx']} tokens" if r.get("ctx", 16) != 16 else ""
    share = r.get("tg1_share_of_copy_bandwidth", 0)
    out.append(f"| {name} | {devs} | {r['pp_tokens_per_s']:.0f} | {r['tg1_tokens_per_s']:.1f} | "
               f"{r['tg1_gb_per_s']:.0f} | {share:.0%} | {r['tgN_tokens_per_s']:.0f} | "
               f"{r['tgN_over_tg1']:.1f}x |")
peer_rows = []
for r in rows:
    if ("model" not in r or r["split"] != "none" or r.get("cuda_graphs")
            or r.get("ctx", 16) != 16 or r.get("matvec_rows", 8) != 8):
        continue
    name = os.path.basename(r["model"]).replace(".gguf", "")
    path = os.path.join(os.path.dirname(sys.argv[2]), f"peer-{name}.jsonl")
    if not os.path.exists(path):
        continue
    pp = tg1 = tgn = None
    for l in open(path):
        try:
            p = json.loads(l)
        except ValueError:
            continue
        if p.get("n_prompt") and not p.get("n_gen"):
            pp = p.get("avg_ts")
        elif p.get("n_gen") and not p.get("n_prompt"):
            tg1 = p.get("avg_ts")
        elif p.get("pl") == r["streams"]:
            tgn = p.get("speed_tg")
    def ratio(a, b):
        return f"{a / b:.2f}x" if a and b else "?"
    def num(v):
        return f"{v:.0f}" if v else "?"
    peer_rows.append(f"| {name} | {r['pp_tokens_per_s']:.0f} / {num(pp)} = "
                     f"{ratio(r['pp_tokens_per_s'], pp)} | {r['tg1_tokens_per_s']:.1f} / {num(tg1)} = "
                     f"{ratio(r['tg1_tokens_per_s'], tg1)} | {r['tgN_tokens_per_s']:.0f} / {num(tgn)} = "
                     f"{ratio(r['tgN_tokens_per_s'], tgn)} |")
if peer_rows:
    out += ["", "kvmesh / llama.cpp (CUDA, flash attention, f16 KV) on the same files:", "",
            "| model | pp t/s | tg1 t/s | tg16 t/s |", "|---|---|---|---|"] + peer_rows
text = "\n".join(out)
open(sys.argv[2], "w").write(text + "\n")
print(text)
PY
cat "$RESULTS/table.md" >>"$RESULTS/summary.txt"
log "done: $FAILS failed test binaries"
exit "$FAILS"
