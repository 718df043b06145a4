#!/usr/bin/env bash
# One call on a machine with an NVIDIA GPU: configure with CUDA for the GPU
# present (sm_90 by default: H100/H200), build the CUDA tests, run them
# against the CPU reference, and print the kernel timings they report.
#   bench/gpu_check.sh [CUDA_ARCH]
# Needs the same packages as the CPU build (scripts/install-deps.sh) and
# CUDA 13 in /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${1:-90}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
B=build-gpu
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVMESH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null
cmake --build "$B" --target cuda_kernels_test kernels_cpu_test --parallel "$(nproc)"
"$B/worker/kernels/cuda/cuda_kernels_test" --gtest_color=no
echo "gpu_check: CUDA tests passed on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
