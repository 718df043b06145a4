#!/usr/bin/env bash
# Fuzzes the GGUF reader (and the model/tokenizer metadata readers behind it),
# the Jinja chat-template engine and the grammar front ends (GBNF, regex, JSON
# Schema) with libFuzzer under ASan+UBSan, each for a bounded time.
#   ./scripts/fuzz.sh [SECONDS] [JINJA_SECONDS] [GRAMMAR_SECONDS]   (60, 30, 20)
# Seeds: small generated files plus the real models in ../shared/models; the
# real chat templates in ../shared/chat-templates.
# Exits non-zero if the fuzzer finds a crash, leak or sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
JINJA_SECONDS=${2:-30}
GRAMMAR_SECONDS=${3:-20}
BUILD=build/fuzz
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DKVMESH_BUILD_FUZZERS=ON -DKVMESH_SANITIZE=ON -DKVMESH_BUILD_TESTS=OFF -DKVMESH_CUDA=OFF >/dev/null
fi
cmake --build "$BUILD" --target gguf_fuzz gguf_seed_writer jinja_fuzz grammar_fuzz --parallel "$(nproc)"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
"$BUILD/fuzz/gguf_seed_writer" "$corpus"
shared=${KVMESH_SHARED_DIR:-../shared}
if compgen -G "$shared/models/*.gguf" >/dev/null; then
  cp "$shared"/models/*.gguf "$corpus"/
else
  echo "fuzz: $shared/models not found; fuzzing from generated seeds only"
fi
mkdir -p "$BUILD/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
log="$BUILD/fuzz.log"
rc=0
"$BUILD/fuzz/gguf_fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=1048576 -rss_limit_mb=4096 \
  -timeout=20 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" "$corpus" >"$log" 2>&1 || rc=$?
grep -E "^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|ERROR|runtime error" "$log" || true
if [ "$rc" -ne 0 ]; then
  echo "fuzz: FAILED (exit $rc); full log in $log, reproducer in $BUILD/artifacts/" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "fuzz: no crashes, leaks or sanitizer reports in ${SECONDS_TO_RUN}s"

# The Jinja engine, seeded with real templates.
jinja_corpus=$(mktemp -d)
trap 'rm -rf "$corpus" "$jinja_corpus"' EXIT
if compgen -G "$shared/chat-templates/templates/*.jinja" >/dev/null; then
  cp "$shared"/chat-templates/templates/*.jinja "$jinja_corpus"/
else
  printf '{{ messages[0].content }}' >"$jinja_corpus/seed.jinja"
fi
log="$BUILD/jinja_fuzz.log"
rc=0
"$BUILD/fuzz/jinja_fuzz" -max_total_time="$JINJA_SECONDS" -max_len=65536 -rss_limit_mb=4096 \
  -timeout=20 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/jinja-" "$jinja_corpus" >"$log" 2>&1 || rc=$?
grep -E "^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|ERROR|runtime error" "$log" || true
if [ "$rc" -ne 0 ]; then
  echo "fuzz: jinja FAILED (exit $rc); full log in $log, reproducer in $BUILD/artifacts/" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "fuzz: jinja: no crashes, leaks or sanitizer reports in ${JINJA_SECONDS}s"

# The grammar front ends, seeded with GBNF, regexes and schemas.
grammar_corpus=$(mktemp -d)
trap 'rm -rf "$corpus" "$jinja_corpus" "$grammar_corpus"' EXIT
printf 'root ::= "[" (item ("," item)*)? "]"\nitem ::= [a-z]+ | [0-9]{1,3}\n' >"$grammar_corpus/list.gbnf"
printf '^[A-Z]{2}-\\d+(\\.[0-9]*)?$' >"$grammar_corpus/regex"
cp bench/constrained_schema.json "$grammar_corpus/schema.json"
printf '{"anyOf": [{"type": "string", "format": "date"}, {"$ref": "#/$defs/n"}], "$defs": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}}' >"$grammar_corpus/anyof.json"
log="$BUILD/grammar_fuzz.log"
rc=0
"$BUILD/fuzz/grammar_fuzz" -max_total_time="$GRAMMAR_SECONDS" -max_len=4096 -rss_limit_mb=4096 \
  -timeout=20 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/grammar-" "$grammar_corpus" >"$log" 2>&1 || rc=$?
grep -E "^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|ERROR|runtime error" "$log" || true
if [ "$rc" -ne 0 ]; then
  echo "fuzz: grammar FAILED (exit $rc); full log in $log, reproducer in $BUILD/artifacts/" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "fuzz: grammar front ends: no crashes, leaks or sanitizer reports in ${GRAMMAR_SECONDS}s"
