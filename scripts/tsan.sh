#!/usr/bin/env bash
# The concurrency tests under ThreadSanitizer (clang, build/tsan): the router
# (RouterCore with fake workers: retries, cancellation, 50 streams through a
# worker's deregistration and another's death; the registry; the prefix
# index's sharded updates and matches; the load seqlock; the stream
# watchdog; a WorkerConnection's poller and subscriber) and the engine (its
# loop against submitting and cancelling threads, the KV event hub, the
# host tier's copies). Libraries from Debian (gRPC, protobuf, abseil) are not
# instrumented; scripts/tsan.supp names the reports that come from inside
# them and why. About 8 minutes to build from nothing on 2 cores and 15 s
# to run; not part of scripts/test.sh, which must stay within its time
# budget (CI already builds the tree twice: warnings as errors, then
# ASan+UBSan for the fuzzers).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build/tsan
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DKVMESH_TSAN=ON -DKVMESH_BUILD_TESTS=ON -DKVMESH_CUDA=OFF -DKVMESH_CCACHE=OFF >/dev/null
fi
cmake --build "$BUILD" --target router_test engine_test --parallel "$(nproc)"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
"$BUILD/router/router_test" --gtest_brief=1
(cd "$BUILD/worker" && ./engine_test --gtest_brief=1)
echo "tsan: router_test and engine_test passed under ThreadSanitizer"
