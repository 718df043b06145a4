#!/bin/sh
# ctest entry: the Codex CLI (tools/ci's pinned @openai/codex) runs `codex
# exec` against a real cluster serving tiny-qwen3 (`kvmesh synth`: the Qwen2
# tokenizer and Qwen3's chat template) through the Responses API
# (POST /v1/responses, streamed, with Codex's developer messages, its nine
# tools including a namespace and web_search, reasoning, include, store:
# false and prompt_cache_key). The prompt must complete with exit status 0:
# no API error. Retries are off, so a failure shows at once. Prints what
# Codex reported (the tokens it used) and the router's count of answered
# /v1/responses requests.
# Prints SKIP and passes when node or the npm package is missing.
# Usage: codex_probe.sh KVMESH_BINARY WORKER_BINARY ROUTER_BINARY CI_DIR
set -eu
kvmesh="$1"; worker="$2"; router="$3"; ci_dir="$4"
codex="$ci_dir/node_modules/.bin/codex"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the Codex check did not run"; exit 0
fi
if [ ! -x "$codex" ]; then
  echo "SKIP: npm package @openai/codex is not installed in $ci_dir; the Codex check did not run"
  exit 0
fi
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
. "$here/../support/probe_lib.sh"

"$kvmesh" synth --shape tiny-qwen3 --type q8_0 -o "$tmp/tiny-qwen3.gguf" >/dev/null
"$worker" --model "$tmp/tiny-qwen3.gguf" --context-length 65536 --grpc-port 0 --http-port 0 \
  --log-level warning >"$tmp/w" 2>"$tmp/w.err" &
pids="$pids $!"
wait_line "$tmp/w"
"$router" --grpc-port 0 --http-port 0 --log-level warning --workers "$(field grpc "$tmp/w")" \
  >"$tmp/r" 2>"$tmp/r.err" &
pids="$pids $!"
wait_line "$tmp/r"
http=$(field http "$tmp/r")
wait_healthy "$http" "$tmp/r.err" "$tmp/w.err"
model=$(curl -sf "http://$http/v1/models" | sed 's/.*"id":"\([^"]*\)".*/\1/')
[ -n "$model" ] || fail "GET http://$http/v1/models named no model"

mkdir -p "$tmp/home/.codex" "$tmp/project"
cat >"$tmp/home/.codex/config.toml" <<TOML
model = "$model"
model_provider = "local"
[model_providers.local]
name = "local"
base_url = "http://$http/v1"
wire_api = "responses"
env_key = "LOCAL_API_KEY"
request_max_retries = 0
stream_max_retries = 0
TOML
cd "$tmp/project"
if ! HOME="$tmp/home" LOCAL_API_KEY=unused timeout 400 "$codex" exec --skip-git-repo-check \
    "Say hello" </dev/null >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: codex exec exited non-zero" >&2
  cat "$tmp/out" "$tmp/err" "$tmp/r.err" "$tmp/w.err" >&2
  exit 1
fi
grep -i "tokens used" -A1 "$tmp/err" || true
answered=$(curl -sf "http://$http/metrics" | grep 'route="/v1/responses"' | grep 'outcome="200"' || true)
echo "router: $answered"
[ -n "$answered" ] || { echo "FAIL: the router answered no /v1/responses request with 200" >&2; cat "$tmp/err" >&2; exit 1; }
echo "PASS"
