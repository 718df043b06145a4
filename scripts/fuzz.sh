#!/usr/bin/env bash
# Fuzzes every parser that takes outside input with libFuzzer under
# ASan+UBSan, each for a bounded time:
#   gguf            the GGUF reader and the model/tokenizer metadata behind it
#   jinja           the chat-template engine
#   grammar         the constrained-decoding front ends (GBNF, regex, JSON Schema)
#   tokenizer       every vocabulary type of ../shared/vocab: encode, decode, stream
#   gateway         the HTTP gateway's OpenAI, Responses and Anthropic request parsers
#   config          the servers' YAML config files and their validation
#   worker_request  a worker's checks of a GenerateRequest, then a few sampled tokens
#
#   ./scripts/fuzz.sh [SECONDS] [JINJA_SECONDS] [GRAMMAR_SECONDS] [EACH_OTHER_SECONDS]
#                                                         (60, 30, 20, 20)
# Seeds: small generated GGUF files and the real models of ../shared/models;
# the real chat templates; fuzz/corpus/<target>/ (committed) plus, for the
# tokenizer, llama.cpp's tokenizer test texts (../shared/vocab/*.inp).
# Exits non-zero if a fuzzer finds a crash, leak or sanitizer report; the
# reproducer is left in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
JINJA_SECONDS=${2:-30}
GRAMMAR_SECONDS=${3:-20}
OTHER_SECONDS=${4:-20}
source scripts/sanitizer_build.sh
targets=(gguf_fuzz jinja_fuzz grammar_fuzz tokenizer_fuzz gateway_fuzz config_fuzz worker_request_fuzz)
cmake --build "$BUILD" --target "${targets[@]}" gguf_seed_writer worker_request_seed_writer \
  --parallel "$(nproc)"

shared=${KVMESH_SHARED_DIR:-../shared}
export KVMESH_FUZZ_VOCAB_DIR="$shared/vocab"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$BUILD/artifacts"
corpora=$(mktemp -d)
trap 'rm -rf "$corpora"' EXIT

# run NAME SECONDS MAX_LEN CORPUS: one target, its summary, and exit 1 on a finding.
run() {
  local name=$1 seconds=$2 max_len=$3 corpus=$4
  local log="$BUILD/$name.log" rc=0
  "$BUILD/fuzz/$name" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=4096 \
    -timeout=20 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$name-" "$corpus" \
    >"$log" 2>&1 || rc=$?
  grep -E "^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|ERROR|runtime error" "$log" || true
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $name FAILED (exit $rc); full log in $log, reproducer in $BUILD/artifacts/" >&2
    tail -n 60 "$log" >&2
    exit 1
  fi
  echo "fuzz: $name: no crashes, leaks or sanitizer reports in ${seconds}s"
}
# corpus NAME: a fresh copy of fuzz/corpus/NAME (the fuzzer adds to it).
corpus() {
  mkdir -p "$corpora/$1"
  if [ -d "fuzz/corpus/$1" ]; then cp fuzz/corpus/"$1"/* "$corpora/$1"/; fi
  echo "$corpora/$1"
}

gguf=$(corpus gguf)
"$BUILD/fuzz/gguf_seed_writer" "$gguf"
if compgen -G "$shared/models/*.gguf" >/dev/null; then
  cp "$shared"/models/*.gguf "$gguf"/
else
  echo "fuzz: $shared/models not found; fuzzing GGUF from generated seeds only"
fi
run gguf_fuzz "$SECONDS_TO_RUN" 1048576 "$gguf"

jinja=$(corpus jinja)
if compgen -G "$shared/chat-templates/templates/*.jinja" >/dev/null; then
  cp "$shared"/chat-templates/templates/*.jinja "$jinja"/
else
  printf '{{ messages[0].content }}' >"$jinja/seed.jinja"
fi
run jinja_fuzz "$JINJA_SECONDS" 65536 "$jinja"

grammar=$(corpus grammar)
cp bench/constrained_schema.json "$grammar/schema.json"
run grammar_fuzz "$GRAMMAR_SECONDS" 4096 "$grammar"

run gateway_fuzz "$OTHER_SECONDS" 16384 "$(corpus gateway)"
run config_fuzz "$OTHER_SECONDS" 4096 "$(corpus config)"

# The tokenizer and worker targets load real vocabularies.
if compgen -G "$shared/vocab/*.gguf" >/dev/null; then
  tokenizer=$(corpus tokenizer)
  for f in "$shared"/vocab/*.inp; do cp "$f" "$tokenizer/$(basename "$f").txt"; done
  run tokenizer_fuzz "$OTHER_SECONDS" 2048 "$tokenizer"
  request=$(corpus worker_request)
  "$BUILD/fuzz/worker_request_seed_writer" "$request"
  run worker_request_fuzz "$OTHER_SECONDS" 4096 "$request"
else
  echo "fuzz: SKIP tokenizer_fuzz and worker_request_fuzz: no vocabularies in $shared/vocab"
fi
