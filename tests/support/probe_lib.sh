# Shell helpers for the ctest probes that start real processes (sourced).
# Sets $tmp (a scratch directory) and $pids (processes to stop); on exit it
# kills those processes and removes $tmp.
#   wait_line FILE     waits (up to 60 s) until the process writing FILE
#                      prints its "listening" line; else shows FILE, FILE.err
#   wait_healthy ADDR LOG...  waits (up to 60 s) until http://ADDR/healthz
#                      answers 200; else fails naming it and shows the LOGs
#   field KEY FILE     the value of KEY=VALUE in FILE's first such word
#   fail MESSAGE       prints FAIL: MESSAGE and exits 1
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
wait_line() {
  i=0
  while ! grep -q listening "$1" 2>/dev/null; do
    i=$((i+1)); [ $i -gt 600 ] && { cat "$1" "$1.err" >&2; exit 1; }; sleep 0.1
  done
}
wait_healthy() {
  addr="$1"; shift
  i=0
  until curl -sf "http://$addr/healthz" >/dev/null; do
    i=$((i+1))
    if [ $i -gt 600 ]; then
      echo "FAIL: http://$addr/healthz did not answer 200 within 60 s" >&2
      cat "$@" >&2
      exit 1
    fi
    sleep 0.1
  done
}
field() { grep -o "$1=[^ ]*" "$2" | head -1 | cut -d= -f2; }
fail() { echo "FAIL: $*" >&2; exit 1; }
