# Sourced by the routing benchmarks: a local cluster of fresh processes on
# loopback. Needs B (the build directory) and tmp (a scratch directory).
#
#   start_cluster WORKERS POLICY [worker flags...]   # sets ROUTER (its gRPC address)
#   stop_cluster
#
# POLICY may be "prefix+fetch": the prefix policy with peer fetch, or
# "prefix+norefill": without pricing refill ratios, or "prefix+growth": with
# a named session's turns to come priced (--prefix-session-growth-weight 1),
# or "prefix+noload": without pricing the live sessions' next turns as load
# (--prefix-session-load-weight 0), or "prefix+load=W": those turns priced
# at weight W (--prefix-session-load-weight W). ROLES (one
# word per worker, e.g. "prefill decode") gives the workers roles, and
# ROUTER_FLAGS more router flags. ROUTERS (default 1) routers over the same
# workers; ROUTER is then their addresses, comma-separated. WORKER_CPUS (one
# CPU list per worker, e.g. "0 1") and ROUTER_CPUS (one list for every
# router) pin the processes with taskset, as if each had its own machine.
# KV_MEMORY_EACH (one byte count per worker) gives each worker its own
# --kv-memory, after the shared flags, for clusters of unequal caches.

# The value of NAME=VALUE in a process's "listening" line.
field() { grep -o "$1=[^ ]*" "$2" 2>/dev/null | head -1 | cut -d= -f2; }

# Waits up to 30 s for the process whose stdout is $1 (its stderr beside it,
# .err for .out) to print its "listening" line; otherwise says which one did
# not, with the end of its stderr, and fails.
await_listening() {
  local _
  for _ in $(seq 300); do grep -qs listening "$1" && return 0; sleep 0.1; done
  echo "cluster_lib: $(basename "${1%.out}") did not start listening within 30 s; its stderr ends:" >&2
  tail -5 "${1%.out}.err" >&2 || true
  return 1
}

start_cluster() {
  local workers=$1 policy=$2
  shift 2
  local i addrs=() roles=(${ROLES:-}) router_flags=(${ROUTER_FLAGS:-}) cpus=(${WORKER_CPUS:-}) pin
  local kv_each=(${KV_MEMORY_EACH:-}) own
  local router_pin=()
  [[ -n ${ROUTER_CPUS:-} ]] && router_pin=(taskset -c "$ROUTER_CPUS")
  if [[ $policy == *+fetch ]]; then
    policy=${policy%+fetch}
    router_flags+=(--prefix-peer-fetch)
  fi
  if [[ $policy == *+norefill ]]; then
    policy=${policy%+norefill}
    router_flags+=(--prefix-refill-weight 0)
  fi
  if [[ $policy == *+growth ]]; then
    policy=${policy%+growth}
    router_flags+=(--prefix-session-growth-weight 1)
  fi
  if [[ $policy == *+noload ]]; then
    policy=${policy%+noload}
    router_flags+=(--prefix-session-load-weight 0)
  fi
  if [[ $policy == *+load=* ]]; then
    router_flags+=(--prefix-session-load-weight "${policy##*+load=}")
    policy=${policy%+load=*}
  fi
  for ((i = 0; i < workers; ++i)); do
    pin=()
    [[ -n ${cpus[$i]:-} ]] && pin=(taskset -c "${cpus[$i]}")
    own=()
    [[ -n ${kv_each[$i]:-} ]] && own=(--kv-memory "${kv_each[$i]}")
    ${pin[@]+"${pin[@]}"} "$B/worker/kvmesh-worker" --grpc-port 0 --http-port 0 --threads 1 --worker-id "w$i" \
      --role "${roles[$i]:-both}" --log-level warning "$@" ${own[@]+"${own[@]}"} >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
  done
  for ((i = 0; i < workers; ++i)); do
    await_listening "$tmp/w$i.out"
    addrs+=("$(field grpc "$tmp/w$i.out")")
  done
  local r routers=()
  for ((r = 0; r < ${ROUTERS:-1}; ++r)); do
    ${router_pin[@]+"${router_pin[@]}"} "$B/router/kvmesh-router" --grpc-port 0 --http-port 0 --policy "$policy" --log-level warning \
      ${router_flags[@]+"${router_flags[@]}"} --workers "$(IFS=,; echo "${addrs[*]}")" \
      >"$tmp/r$r.out" 2>"$tmp/r$r.err" &
  done
  for ((r = 0; r < ${ROUTERS:-1}; ++r)); do
    await_listening "$tmp/r$r.out"
    routers+=("$(field grpc "$tmp/r$r.out")")
  done
  sleep 1  # let the routers see every worker healthy
  ROUTER=$(IFS=,; echo "${routers[*]}")
}

stop_cluster() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
}
