#!/usr/bin/env bash
# kvmesh's main job on its default model, from a fresh Debian 12 machine:
# installs packages, builds, and starts a local cluster — one router and two
# workers serving stories260K.gguf (from ../shared/models or models/) — then
# sends it one request and prints how to talk to it. The cluster keeps
# running; stop it with ./scripts/cluster.sh stop.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh >/dev/null
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh >/dev/null
./scripts/cluster.sh start
port=${ROUTER_HTTP_PORT:-8080}
echo
echo "A first request (OpenAI completions API, greedy):"
curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}'
echo
