#!/usr/bin/env bash
# kvmesh's main job on its default model, from a fresh Debian 12 machine:
# installs packages, builds, and generates text with `kvmesh run` on
# stories260K.gguf (found in ../shared/models or models/).
#   ./scripts/demo.sh ["PROMPT"]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh >/dev/null
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh >/dev/null
exec "${BUILD_DIR:-build}/cli/kvmesh" run -p "${1:-Once upon a time}" -n 128
