#!/bin/sh
# ctest entry: a real Prometheus scrapes a local cluster (router + 2
# workers, one with --kv-eviction adaptive) with deploy/prometheus/rules.yml,
# and
#   1. every metric the rules and the Grafana dashboards name is one the
#      processes export (checked against their live /metrics, which
#      `promtool check metrics` also lints);
#   2. every rule evaluates without error on the live series;
#   3. after one worker is killed (SIGKILL), KvmeshWorkerDown fires for it
#      (the rules' `for:` durations shortened to 5 s and their evaluation
#      interval to 1 s for the test).
# Bounded: about 30 s. Prints SKIP and passes when prometheus, promtool,
# curl or jq is missing.
# Usage: prometheus_cluster_probe.sh WORKER_BINARY ROUTER_BINARY SOURCE_DIR
set -eu
worker="$1"; router="$2"; src="$3"
for tool in prometheus promtool curl jq; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed; the Prometheus check did not run"; exit 0; }
done
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
. "$here/../support/probe_lib.sh"

# w1 evicts adaptively, so the gauge only that mode exports is live too.
for i in 0 1; do
  eviction=lru; [ "$i" = 1 ] && eviction=adaptive
  "$worker" --grpc-port 0 --http-port 0 --threads 1 --worker-id "w$i" --log-level warning \
    --kv-eviction "$eviction" >"$tmp/w$i" 2>"$tmp/w$i.err" &
  pids="$pids $!"
  eval "wpid$i=$!"
done
wait_line "$tmp/w0"; wait_line "$tmp/w1"
w0_grpc=$(field grpc "$tmp/w0"); w1_grpc=$(field grpc "$tmp/w1")
"$router" --grpc-port 0 --http-port 0 --log-level warning --workers "$w0_grpc,$w1_grpc" \
  >"$tmp/r" 2>"$tmp/r.err" &
pids="$pids $!"
wait_line "$tmp/r"
http=$(field http "$tmp/r")
wait_healthy "$http" "$tmp/r.err"
for n in 1 2 3 4; do
  curl -sf "http://$http/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\":\"Once upon a time $n\",\"max_tokens\":8}" >/dev/null
done

# 1. Metric names.
targets="$http $(field http "$tmp/w0") $(field http "$tmp/w1")"
: >"$tmp/names"
for t in $targets; do
  curl -sf "http://$t/metrics" >"$tmp/scrape"
  promtool check metrics <"$tmp/scrape" || fail "promtool check metrics found problems in $t/metrics"
  grep -v '^#' "$tmp/scrape" | sed 's/[{ ].*//' >>"$tmp/names"
done
sort -u "$tmp/names" -o "$tmp/names"
{ cat "$src/deploy/prometheus/rules.yml"; cat "$src"/deploy/grafana/*.json; } |
  grep -o 'kvmesh_[a-z0-9_]*' | sort -u >"$tmp/used"
missing=$(comm -23 "$tmp/used" "$tmp/names")
[ -z "$missing" ] || fail "rules or dashboards use metrics no process exports: $missing"
echo "$(wc -l <"$tmp/used") metric names used by the rules and dashboards; all exported ($(wc -l <"$tmp/names") series names live)"

# 2. A real Prometheus with the rules.
sed -e 's/for: [0-9]*[smh]/for: 5s/' -e 's/interval: [0-9]*[smh]/interval: 1s/' "$src/deploy/prometheus/rules.yml" >"$tmp/rules.yml"
cat >"$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: kvmesh-router
    static_configs: [{targets: ["$http"]}]
  - job_name: kvmesh-worker
    static_configs: [{targets: ["$(field http "$tmp/w0")", "$(field http "$tmp/w1")"]}]
YAML
port=$(( 20000 + $$ % 20000 ))
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$port" >"$tmp/prom.log" 2>&1 &
pids="$pids $!"
prom="http://127.0.0.1:$port"
query() { curl -sf --data-urlencode "query=$1" "$prom/api/v1/query" | jq -r '.data.result | length'; }
i=0; until [ "$(query 'up == 1' 2>/dev/null || echo 0)" = 3 ]; do
  i=$((i+1)); [ $i -gt 300 ] && { cat "$tmp/prom.log" >&2; fail "Prometheus did not scrape the 3 targets"; }; sleep 0.1
done
sleep 3  # a few rule evaluations
bad=$(curl -sf "$prom/api/v1/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.lastError)"] | join("; ")')
[ -z "$bad" ] || fail "rules failed to evaluate: $bad"
echo "$(curl -sf "$prom/api/v1/rules" | jq '[.data.groups[].rules[]] | length') rules evaluate on the live series"

# 3. Kill a worker: its alert fires.
kill -9 "$wpid1"
start=$(date +%s)
until curl -sf "$prom/api/v1/alerts" | jq -e --arg w w1 \
    '.data.alerts[] | select(.labels.alertname == "KvmeshWorkerDown" and .labels.worker == $w and .state == "firing")' >/dev/null; do
  [ $(( $(date +%s) - start )) -gt 60 ] && { curl -s "$prom/api/v1/alerts" >&2; fail "KvmeshWorkerDown did not fire within 60 s"; }
  sleep 0.5
done
echo "KvmeshWorkerDown fired for worker w1 ($w1_grpc) $(( $(date +%s) - start )) s after SIGKILL"
other=$(curl -sf "$prom/api/v1/alerts" | jq -r '[.data.alerts[] | select(.state == "firing") | .labels.alertname + " " + (.labels.worker // "")] | join(", ")')
echo "firing: $other"
echo "PASS"
