#!/usr/bin/env bash
# Prepares .gpu-check/ for bench/gpu_check.sh on a GPU machine that has CUDA
# but none of this project's packages and no ../shared (the device machines
# of this workplace): the test models, llama.cpp's golden outputs for them,
# the vocab the synthetic models use, GoogleTest's sources, nlohmann-json and OpenSSL's headers and
# libraries, copied from this machine (Debian 12, scripts/install-deps.sh).
# About 47 MiB. .gpu-check/ is ignored by git through .git/info/exclude;
# the GPU run carries it.
# With LLAMACPP_REPO (a git clone or mirror of the llama.cpp repository that
# holds LLAMACPP_COMMIT, ../shared/TOOLS.md section P), it also packs the
# peer's sources that a CUDA build of llama-bench and llama-batched-bench
# needs (about 3 MiB compressed) for GPU_CHECK_PEER=1.
#   [LLAMACPP_REPO=DIR] bench/gpu_check_prepare.sh [SHARED_DIR]
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
cp -r "$SHARED/golden" "$P/shared/"  # llama.cpp's outputs, for the golden tests on the GPU
cp -r /usr/src/googletest "$P/deps/googletest"
cp -r /usr/include/nlohmann "$P/deps/include/"
cp -r /usr/share/cmake/nlohmann_json "$P/deps/share/cmake/"
cp -r /usr/include/openssl "$P/deps/include/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$P/deps/include/openssl/"
for lib in libcrypto libssl; do
  cp "/usr/lib/x86_64-linux-gnu/$lib.so.3" "$P/deps/lib/"
  ln -s "$lib.so.3" "$P/deps/lib/$lib.so"
done
# (A snapshot without the 7 vocab blobs under models/ makes git print
# "invalid object" for them; they are not packed.)
if [ -n "${LLAMACPP_REPO:-}" ]; then
  commit=${LLAMACPP_COMMIT:-81ff7abe50b95fb81cc70a6cdba1eb1a02a48f62}
  git -C "$LLAMACPP_REPO" archive --format=tar "$commit" CMakeLists.txt cmake LICENSE licenses \
    ggml src include common vendor tools \
    ':(exclude)ggml/src/ggml-opencl' ':(exclude)ggml/src/ggml-vulkan' \
    ':(exclude)ggml/src/ggml-sycl' ':(exclude)ggml/src/ggml-hexagon' \
    ':(exclude)ggml/src/ggml-metal' ':(exclude)ggml/src/ggml-webgpu' \
    ':(exclude)ggml/src/ggml-openvino' ':(exclude)ggml/src/ggml-cann' \
    ':(exclude)ggml/src/ggml-virtgpu' ':(exclude)tools/ui' ':(exclude)tools/server' |
    xz -T0 -6 >"$P/llama.cpp.tar.xz"
  echo "$commit" >"$P/llama.cpp.commit"
fi
grep -qxF "/$P/" .git/info/exclude 2>/dev/null || echo "/$P/" >> .git/info/exclude
du -sh "$P"
