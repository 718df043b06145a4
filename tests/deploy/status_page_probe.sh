#!/bin/sh
# ctest entry: the router's /status page in a real headless browser
# (Debian chromium) against a running cluster (router + 2 workers): after
# some requests, the page's script has fetched /status.json and drawn one
# row per worker (healthy, with its model and KV use) and the recent
# routing decisions with their reasons. With SCREENSHOT=FILE it also saves
# a screenshot (docs/status.png is one). About 10 s.
# Prints SKIP and passes when chromium or curl is missing.
# Usage: status_page_probe.sh WORKER_BINARY ROUTER_BINARY
set -eu
worker="$1"; router="$2"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "SKIP: chromium is not installed; the status page check did not run"; exit 0; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed; the status page check did not run"; exit 0; }
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
. "$here/../support/probe_lib.sh"
for i in 0 1; do
  "$worker" --grpc-port 0 --http-port 0 --threads 1 --worker-id "w$i" --log-level warning \
    >"$tmp/w$i" 2>"$tmp/w$i.err" &
  pids="$pids $!"
done
wait_line "$tmp/w0"; wait_line "$tmp/w1"
"$router" --grpc-port 0 --http-port 0 --log-level warning --router-id router-a \
  --workers "$(field grpc "$tmp/w0"),$(field grpc "$tmp/w1")" >"$tmp/r" 2>"$tmp/r.err" &
pids="$pids $!"
wait_line "$tmp/r"
http=$(field http "$tmp/r")
wait_healthy "$http" "$tmp/r.err"
story="Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day"
for n in 1 2 3 4 5 6; do
  curl -sf "http://$http/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\":\"$story $n\",\"max_tokens\":12}" >/dev/null
done
curl -sf "http://$http/status.json" >"$tmp/status.json"
chrome() {
  "$browser" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$tmp/profile" --virtual-time-budget=4000 "$@" 2>>"$tmp/chromium.err"
}
chrome --dump-dom "http://$http/status" >"$tmp/dom.html" || { cat "$tmp/chromium.err" >&2; fail "chromium failed"; }
for w in w0 w1; do
  grep -q "data-worker=\"$w\"" "$tmp/dom.html" || { cat "$tmp/dom.html" >&2; fail "no row for worker $w"; }
done
[ "$(grep -o '<td class="ok">healthy</td>' "$tmp/dom.html" | wc -l)" -eq 2 ] || fail "both workers should show healthy"
decisions=$(grep -o 'data-reason="[a-z_]*"' "$tmp/dom.html" | wc -l)
[ "$decisions" -ge 6 ] || fail "the page shows $decisions decisions, want >= 6"
grep -q "router router-a" "$tmp/dom.html" || fail "the page does not name the router"
grep -q "KV blocks (device tier)" "$tmp/dom.html" || fail "no KV column"
echo "status page: 2 worker rows (healthy), $decisions decisions, reasons: $(grep -o 'data-reason="[a-z_]*"' "$tmp/dom.html" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
if [ -n "${SCREENSHOT:-}" ]; then
  chrome --window-size=1400,700 --hide-scrollbars --screenshot="$SCREENSHOT" "http://$http/status" >/dev/null
  echo "screenshot: $SCREENSHOT"
fi
echo "PASS"
