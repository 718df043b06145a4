#!/bin/sh
# ctest entry: starts a real cluster (router + 2 workers on the default
# model) on free loopback ports and runs cluster_sdk_probe.mjs against it.
# Prints SKIP and passes when node or the pinned npm packages are missing.
# Usage: cluster_sdk_probe.sh WORKER_BINARY ROUTER_BINARY CI_DIR [PROBE.mjs [ARGS…]]
# (default probe: cluster_sdk_probe.mjs). With PROBE_SYNTH="KVMESH_BINARY
# SHAPE" the workers serve a `kvmesh synth --shape SHAPE` model instead. The
# probe finds the workers' HTTP addresses in KVMESH_WORKER_HTTP (A,B).
set -eu
worker="$1"; router="$2"; ci_dir="$3"; shift 3
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the cluster SDK check did not run"; exit 0
fi
for package in openai @anthropic-ai/sdk ajv; do
  if [ ! -f "$ci_dir/node_modules/$package/package.json" ]; then
    echo "SKIP: npm package $package is not installed in $ci_dir; the cluster SDK check did not run"; exit 0
  fi
done
. "$here/support/probe_lib.sh"
model_args=""
if [ -n "${PROBE_SYNTH:-}" ]; then
  synth_bin="${PROBE_SYNTH% *}"; synth_shape="${PROBE_SYNTH#* }"
  "$synth_bin" synth --shape "$synth_shape" --type q8_0 -o "$tmp/model.gguf" >/dev/null
  model_args="--model $tmp/model.gguf"
fi
for i in 0 1; do
  # shellcheck disable=SC2086
  "$worker" $model_args --grpc-port 0 --http-port 0 --threads 1 --log-level warning >"$tmp/w$i" 2>"$tmp/w$i.err" &
  pids="$pids $!"
done
wait_line "$tmp/w0"; wait_line "$tmp/w1"
# The workers' HTTP addresses (metrics), for probes that read them.
KVMESH_WORKER_HTTP="$(field http "$tmp/w0"),$(field http "$tmp/w1")"
export KVMESH_WORKER_HTTP
"$router" --grpc-port 0 --http-port 0 --log-level warning \
  --workers "$(field grpc "$tmp/w0"),$(field grpc "$tmp/w1")" >"$tmp/r" 2>"$tmp/r.err" &
pids="$pids $!"
wait_line "$tmp/r"
http=$(field http "$tmp/r")
wait_healthy "$http" "$tmp/r.err"
probe="${1:-$here/cluster_sdk_probe.mjs}"; [ $# -gt 0 ] && shift
node "$probe" "http://$http" "$ci_dir" "$@"
