#!/usr/bin/env bash
# The router's unit tests under ASan+UBSan (build/fuzz, shared with the fuzz
# targets): RouterCore with fake workers (retries, cancellation, deadlines,
# 50 streams through a worker's deregistration and another's death), the
# registry, the prefix index and the stream watchdog, where lifetimes cross
# threads. About 3 minutes to build from nothing on 2 cores, seconds to run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_build.sh
cmake --build "$BUILD" --target router_test --parallel "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$BUILD/router/router_test" --gtest_brief=1
echo "sanitize: router_test passed under ASan+UBSan"
