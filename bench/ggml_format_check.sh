#!/usr/bin/env bash
# Checks that kvmesh reads and writes every quantized weight type it computes
# with exactly as ggml does (bench/format_check/ggml_format_check.cc): both
# quantizers' bytes are decoded by both libraries and compared bit for bit.
#
# Needs a native llama.cpp build (../shared/TOOLS.md, section P):
#   LLAMACPP_DIR  its source tree (ggml/include), default /work/llamacpp-native
#   LLAMACPP_LIB  the directory holding libggml-base.so, default
#                 $LLAMACPP_DIR/build/bin
#   BUILD         kvmesh's build directory, default build/ci
# Takes about 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMACPP_DIR=${LLAMACPP_DIR:-/work/llamacpp-native}
LLAMACPP_LIB=${LLAMACPP_LIB:-$LLAMACPP_DIR/build/bin}
BUILD=${BUILD:-build/ci}
for f in "$LLAMACPP_DIR/ggml/include/ggml.h" "$LLAMACPP_LIB/libggml-base.so" \
         "$BUILD/worker/kernels/cpu/libkvmesh_kernels_cpu.a"; do
  [ -e "$f" ] || { echo "missing $f (set LLAMACPP_DIR / LLAMACPP_LIB / BUILD)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -O2 -std=c++20 -I. -I"$LLAMACPP_DIR/ggml/include" bench/format_check/ggml_format_check.cc \
  "$BUILD/worker/kernels/cpu/libkvmesh_kernels_cpu.a" "$BUILD/common/libkvmesh_common.a" \
  -L"$LLAMACPP_LIB" -lggml-base -Wl,-rpath,"$LLAMACPP_LIB" -o "$out/check"
"$out/check"
