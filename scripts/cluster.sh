#!/usr/bin/env bash
# A local kvmesh cluster on this machine: one router and two workers on the
# default model (or $KVMESH_MODEL), all on loopback.
#
#   ./scripts/cluster.sh start     # build if needed, start, wait until ready
#   ./scripts/cluster.sh status
#   ./scripts/cluster.sh stop
#
# Ports (override with env): router gRPC $ROUTER_GRPC_PORT (50050), router
# HTTP $ROUTER_HTTP_PORT (8080), workers gRPC 50051/50052, workers HTTP
# 9091/9092. Logs and pid files are in $KVMESH_RUN_DIR (.run/).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${KVMESH_RUN_DIR:-.run}
BUILD_DIR=${BUILD_DIR:-build}
ROUTER_GRPC_PORT=${ROUTER_GRPC_PORT:-50050}
ROUTER_HTTP_PORT=${ROUTER_HTTP_PORT:-8080}
WORKER_PORTS=(50051 50052)
WORKER_HTTP_PORTS=(9091 9092)
THREADS=${KVMESH_WORKER_THREADS:-1}
MODEL_ARGS=()
[ -n "${KVMESH_MODEL:-}" ] && MODEL_ARGS=(--model "$KVMESH_MODEL")

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for_line() {  # file, pattern, seconds
  for _ in $(seq 1 $(( $3 * 10 ))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cluster: timed out waiting for '$2' in $1" >&2
  tail -n 20 "$1" >&2 || true
  return 1
}

start() {
  mkdir -p "$RUN"
  if [ ! -x "$BUILD_DIR/worker/kvmesh-worker" ] || [ ! -x "$BUILD_DIR/router/kvmesh-router" ]; then
    BUILD_DIR=$BUILD_DIR ./scripts/build.sh >/dev/null
  fi
  for i in 0 1; do
    if running "$RUN/worker$i.pid"; then echo "cluster: worker$i already running"; continue; fi
    "$BUILD_DIR/worker/kvmesh-worker" "${MODEL_ARGS[@]}" --grpc-port "${WORKER_PORTS[$i]}" \
      --http-port "${WORKER_HTTP_PORTS[$i]}" --threads "$THREADS" --worker-id "worker$i" \
      >"$RUN/worker$i.log" 2>&1 &
    echo $! >"$RUN/worker$i.pid"
  done
  if ! running "$RUN/router.pid"; then
    "$BUILD_DIR/router/kvmesh-router" --grpc-port "$ROUTER_GRPC_PORT" --http-port "$ROUTER_HTTP_PORT" \
      --workers "127.0.0.1:${WORKER_PORTS[0]},127.0.0.1:${WORKER_PORTS[1]}" >"$RUN/router.log" 2>&1 &
    echo $! >"$RUN/router.pid"
  fi
  wait_for_line "$RUN/worker0.log" "listening" 60
  wait_for_line "$RUN/worker1.log" "listening" 60
  wait_for_line "$RUN/router.log" "listening" 30
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$ROUTER_HTTP_PORT/healthz" >/dev/null && break
    sleep 0.1
  done
  cat <<TXT
kvmesh cluster is up: router gRPC 127.0.0.1:$ROUTER_GRPC_PORT, HTTP 127.0.0.1:$ROUTER_HTTP_PORT,
workers 127.0.0.1:${WORKER_PORTS[0]} and 127.0.0.1:${WORKER_PORTS[1]} (logs in $RUN/).

Talk to it:
  curl -s http://127.0.0.1:$ROUTER_HTTP_PORT/v1/completions -H 'content-type: application/json' \\
    -d '{"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}'
  curl -s http://127.0.0.1:$ROUTER_HTTP_PORT/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 48}'
  $BUILD_DIR/cli/kvmesh complete --router 127.0.0.1:$ROUTER_GRPC_PORT -p "Once upon a time" -n 48
  $BUILD_DIR/cli/kvmesh models --router 127.0.0.1:$ROUTER_GRPC_PORT
  curl -s http://127.0.0.1:$ROUTER_HTTP_PORT/metrics | grep kvmesh_router_decisions
Stop it:
  ./scripts/cluster.sh stop
TXT
}

stop() {
  for name in router worker0 worker1; do
    if running "$RUN/$name.pid"; then
      kill -TERM "$(cat "$RUN/$name.pid")"
      for _ in $(seq 1 100); do running "$RUN/$name.pid" || break; sleep 0.1; done
      running "$RUN/$name.pid" && kill -KILL "$(cat "$RUN/$name.pid")"
      echo "cluster: stopped $name"
    fi
    rm -f "$RUN/$name.pid"
  done
}

status() {
  for name in router worker0 worker1; do
    if running "$RUN/$name.pid"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"; else echo "$name: stopped"; fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
