#!/bin/sh
# ctest entry for sdk_probe.mjs: runs the OpenAI and Anthropic Node SDKs
# against the gateway. Prints SKIP and passes when node or the pinned npm
# packages are missing (scripts/install-deps.sh installs them with npm ci).
# Usage: run_sdk_probe.sh GATEWAY_TEST_SERVER CI_DIR
set -eu
server="$1"
ci_dir="$2"
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the gateway SDK check did not run"
  exit 0
fi
for package in openai @anthropic-ai/sdk; do
  if [ ! -f "$ci_dir/node_modules/$package/package.json" ]; then
    echo "SKIP: npm package $package is not installed in $ci_dir (run scripts/install-deps.sh," \
         "or npm ci there); the gateway SDK check did not run"
    exit 0
  fi
done
exec node "$here/sdk_probe.mjs" "$server" "$ci_dir"
