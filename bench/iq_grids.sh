#!/usr/bin/env bash
# Regenerates worker/kernels/cpu/iq_grids_data.h (the IQ3_S, IQ3_XXS and
# IQ2_XS codebooks) from a native llama.cpp build's decoders, and fails if the
# checked-in file differs (bench/format_check/iq_grids.cc says how).
#   LLAMACPP_DIR  its source tree (ggml/include), default /work/llamacpp-native
#   LLAMACPP_LIB  the directory holding libggml-base.so, default
#                 $LLAMACPP_DIR/build/bin
#   WRITE=1       overwrite the checked-in file instead of comparing
# Takes about 5 s.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMACPP_DIR=${LLAMACPP_DIR:-/work/llamacpp-native}
LLAMACPP_LIB=${LLAMACPP_LIB:-$LLAMACPP_DIR/build/bin}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -O1 -std=c++20 -I"$LLAMACPP_DIR/ggml/include" bench/format_check/iq_grids.cc \
  -L"$LLAMACPP_LIB" -lggml-base -Wl,-rpath,"$LLAMACPP_LIB" -o "$out/grids"
"$out/grids" | clang-format --assume-filename=worker/kernels/cpu/iq_grids_data.h > "$out/iq_grids_data.h"
target=worker/kernels/cpu/iq_grids_data.h
if [ "${WRITE:-0}" = 1 ]; then
  cp "$out/iq_grids_data.h" "$target"
  echo "wrote $target"
elif cmp -s "$out/iq_grids_data.h" "$target"; then
  echo "$target matches the decoders"
else
  echo "$target differs from the decoders (WRITE=1 to regenerate)" >&2
  exit 1
fi
