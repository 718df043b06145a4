#!/usr/bin/env bash
# Prepares .gpu-check/ for bench/gpu_check.sh on a GPU machine that has CUDA
# but none of this project's packages and no ../shared (the device machines
# of this workplace): the test models and the vocab the synthetic models
# use, GoogleTest's sources, nlohmann-json and OpenSSL's headers and
# libraries, copied from this machine (Debian 12, scripts/install-deps.sh).
# About 47 MiB. .gpu-check/ is ignored by git through .git/info/exclude;
# the GPU run carries it.
#   bench/gpu_check_prepare.sh [SHARED_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${1:-../shared}
P=.gpu-check
rm -rf "$P"
mkdir -p "$P/shared/models" "$P/shared/vocab" "$P/deps/include" "$P/deps/lib" "$P/deps/share/cmake"
for m in stories260K stories260K-Q8_0 stories260K-Q4_0 stories260K-F16 \
         tinystories-d64 tinystories-d64-Q4_K_M tinystories-d64-Q6_K tinystories-d64-F16; do
  cp "$SHARED/models/$m.gguf" "$P/shared/models/"
done
cp "$SHARED/vocab/ggml-vocab-llama-bpe.gguf" "$P/shared/vocab/"
cp -r /usr/src/googletest "$P/deps/googletest"
cp -r /usr/include/nlohmann "$P/deps/include/"
cp -r /usr/share/cmake/nlohmann_json "$P/deps/share/cmake/"
cp -r /usr/include/openssl "$P/deps/include/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$P/deps/include/openssl/"
for lib in libcrypto libssl; do
  cp "/usr/lib/x86_64-linux-gnu/$lib.so.3" "$P/deps/lib/"
  ln -s "$lib.so.3" "$P/deps/lib/$lib.so"
done
grep -qxF "/$P/" .git/info/exclude 2>/dev/null || echo "/$P/" >> .git/info/exclude
du -sh "$P"
