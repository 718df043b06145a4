#!/bin/sh
# ctest entry: Claude Code (tools/ci's pinned @anthropic-ai/claude-code) in
# print mode against a real cluster serving tiny-qwen3 (`kvmesh synth`: the
# Qwen2 tokenizer and Qwen3's own chat template, so Claude Code's tools and
# system prompt go through the real template). Two prompts in one session
# (the second with --continue) must complete without an API error, and the
# second must find at least 90% of its prompt in the prefix cache. Prints
# both turns' usage and time to first token (cold, then warm). The router's
# request timeout is 5 s, far below the cold prefill (about 12 s here): a
# prefill that keeps moving must not be cut off.
# Prints SKIP and passes when node or the npm package is missing.
# Usage: claude_code_probe.sh KVMESH_BINARY WORKER_BINARY ROUTER_BINARY CI_DIR
set -eu
kvmesh="$1"; worker="$2"; router="$3"; ci_dir="$4"
claude="$ci_dir/node_modules/.bin/claude"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the Claude Code check did not run"; exit 0
fi
if [ ! -x "$claude" ]; then
  echo "SKIP: npm package @anthropic-ai/claude-code is not installed in $ci_dir; the Claude Code check did not run"
  exit 0
fi
if ! command -v jq >/dev/null 2>&1; then
  echo "SKIP: jq is not installed; the Claude Code check did not run"; exit 0
fi
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
. "$here/../support/probe_lib.sh"

"$kvmesh" synth --shape tiny-qwen3 --type q8_0 -o "$tmp/tiny-qwen3.gguf" >/dev/null
"$worker" --model "$tmp/tiny-qwen3.gguf" --context-length 65536 --grpc-port 0 --http-port 0 \
  --log-level warning >"$tmp/w" 2>"$tmp/w.err" &
pids="$pids $!"
wait_line "$tmp/w"
"$router" --grpc-port 0 --http-port 0 --log-level warning --request-timeout-seconds 5 --workers "$(field grpc "$tmp/w")" \
  >"$tmp/r" 2>"$tmp/r.err" &
pids="$pids $!"
wait_line "$tmp/r"
http=$(field http "$tmp/r")
wait_healthy "$http" "$tmp/r.err" "$tmp/w.err"

mkdir -p "$tmp/home" "$tmp/project"
cd "$tmp/project"
export HOME="$tmp/home" ANTHROPIC_BASE_URL="http://$http" ANTHROPIC_API_KEY=unused \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1

turn() {  # turn N ARGS...: one print-mode prompt; its JSON result in $tmp/turnN.json
  n="$1"; shift
  if ! timeout 400 "$claude" -p "$@" --output-format json >"$tmp/turn$n.json" 2>"$tmp/turn$n.err"; then
    echo "FAIL: turn $n: claude exited non-zero" >&2
    cat "$tmp/turn$n.json" "$tmp/turn$n.err" "$tmp/r.err" "$tmp/w.err" >&2
    exit 1
  fi
  if [ "$(jq -r .is_error "$tmp/turn$n.json")" != false ]; then
    echo "FAIL: turn $n reported an error:" >&2; cat "$tmp/turn$n.json" >&2; exit 1
  fi
  jq -r --arg n "$n" '"turn \($n): stop_reason \(.stop_reason), input_tokens \(.usage.input_tokens), cache_read_input_tokens \(.usage.cache_read_input_tokens), output_tokens \(.usage.output_tokens), ttft_ms \(.ttft_ms)"' "$tmp/turn$n.json"
}

turn 1 "Say hello"
turn 2 --continue "Now say goodbye"
cached=$(jq .usage.cache_read_input_tokens "$tmp/turn2.json")
fresh=$(jq .usage.input_tokens "$tmp/turn2.json")
percent=$(( 100 * cached / (cached + fresh) ))
echo "turn 2: ${percent}% of the prompt came from the prefix cache"
echo "ttft: cold $(jq .ttft_ms "$tmp/turn1.json") ms, warm $(jq .ttft_ms "$tmp/turn2.json") ms"
if [ "$percent" -lt 90 ]; then echo "FAIL: turn 2 cached ${percent}% < 90%" >&2; exit 1; fi
echo "PASS"
