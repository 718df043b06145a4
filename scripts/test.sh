#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs packages,
# builds with warnings as errors, runs every test (ctest), checks formatting,
# and fuzzes every parser of outside input for a bounded time under
# ASan+UBSan (scripts/fuzz.sh).
#
#   FUZZ_SECONDS=120 ./scripts/test.sh     # longer fuzzing
#   SKIP_FUZZ=1 ./scripts/test.sh          # everything but the fuzzing run
#   SKIP_CONTAINERS=1 ./scripts/test.sh    # no container image build
#   SKIP_SANITIZE=1 ./scripts/test.sh      # no ASan+UBSan run of the router's unit tests
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

stamp "installing packages"
./scripts/install-deps.sh

stamp "checking formatting"
./scripts/check-format.sh

stamp "building (warnings are errors)"
BUILD_DIR=${BUILD_DIR:-build/ci} ./scripts/build.sh -DKVMESH_WERROR=ON
BUILD_DIR=${BUILD_DIR:-build/ci}

stamp "running tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc)" --timeout 900

# The container images: built with podman and run as a cluster (needs root
# for the local Debian base; about 10 minutes, most of it compiling the
# CPU-only binaries the images hold).
if [ -n "${SKIP_CONTAINERS:-}" ]; then
  stamp "container images: skipped (SKIP_CONTAINERS is set)"
elif ! command -v podman >/dev/null || [ "$(id -u)" -ne 0 ]; then
  stamp "container images: SKIP (needs podman and root; scripts/containers.sh)"
else
  stamp "container images (podman): build, run a cluster, query it"
  KVMESH_WERROR=ON ./scripts/containers.sh
fi

if [ -z "${SKIP_FUZZ:-}" ]; then
  stamp "fuzzing under ASan+UBSan: the GGUF reader (${FUZZ_SECONDS:-60}s), the Jinja engine (${JINJA_FUZZ_SECONDS:-30}s), the grammar front ends (${GRAMMAR_FUZZ_SECONDS:-20}s), and the tokenizers, gateway requests, config files and worker requests (${OTHER_FUZZ_SECONDS:-20}s each)"
  ./scripts/fuzz.sh "${FUZZ_SECONDS:-60}" "${JINJA_FUZZ_SECONDS:-30}" "${GRAMMAR_FUZZ_SECONDS:-20}" \
    "${OTHER_FUZZ_SECONDS:-20}"
fi
if [ -z "${SKIP_SANITIZE:-}" ]; then
  stamp "the router's unit tests under ASan+UBSan"
  ./scripts/sanitize.sh
fi
stamp "all tests passed"
