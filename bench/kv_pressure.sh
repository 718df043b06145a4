#!/usr/bin/env bash
# Routing under KV pressure, llm-d's setup in miniature: many tenants, each
# with a long shared context and several users, at a KV demand of DEMANDS
# (fractions of the cluster's KV capacity: tenants x context tokens over
# workers x KV tokens per worker). For each demand and policy, a fresh
# cluster (router + WORKERS workers with KV_TOKENS of KV cache each, cold
# caches) serves the same traffic through bench/router_sessions. Prints one
# markdown row per (demand, policy) and the machine load. "hit bound" is the
# most of the prompt tokens an unbounded cache shared by every worker could
# have served (router_sessions, an upper bound): a policy whose hit ratio is
# there reuses everything the traffic lets it. "capacity bound" is the most
# a cache of the cluster's KV_TOKENS together could have served, keeping
# what is used again soonest (router_sessions --fleet-kv-tokens,
# bench/capacity_bound.h): an upper bound for any routing and eviction
# policy on these caches that serves requests in the order they are sent.
# "placement bound" is the same optimum for each worker's own cache over
# the requests the run's router sent it (--worker-kv-tokens; equal caches
# only, and "-" for prefix+fetch, whose workers also get blocks from
# peers): the capacity bound less it is what the placement cost, it less
# the hit ratio what the workers' eviction cost (with the overlap of
# requests in flight, which the bounds count as held from when sent). KV_TOKENS may list
# one size per worker ("2048 2048 6144 6144"): a cluster of unequal caches,
# as a fleet of mixed GPUs has; the demand is then over their sum.
#
#   [WORKERS=4] [ROUTERS=1] [KV_TOKENS=4096] [CONTEXT=1024] [USERS=4] [TURNS=2]
#   [USER_TOKENS=32] [REPLY_TOKENS=16] [TENANTS=] [CONCURRENCY=8] [RATE=0] [THINK_MS=0] [ARRIVALS=fixed] [SEED=0] [TENANT_ORDER=cycle] [SKEW=0] [DEMANDS="0.5 1.0 1.5"] [POLICIES="prefix prefix+fetch approx_prefix
#   least_load round_robin"] [MODEL=../shared/models/stories260K.gguf] [BUILD_DIR=build]
#   bench/kv_pressure.sh
#
# prefix+fetch is the prefix policy with peer fetch (--prefix-peer-fetch).
# prefix+norefill is the prefix policy without pricing the workers' refill
# ratios (--prefix-refill-weight 0), as it was before them.
# prefix+growth is the prefix policy pricing a named session's turns to come
# (--prefix-session-growth-weight 1); prefix+noload the prefix policy without
# pricing the live named sessions' next turns as load
# (--prefix-session-load-weight 0), as it was before that; prefix+load=W
# prices them at weight W (the default is 1).
# RATE > 0 makes the traffic open loop: RATE requests per second offered
# whatever the cluster serves (router_sessions --rate), as llm-d's benchmark
# offers a fixed QPS; 0 keeps CONCURRENCY sessions in flight (closed loop).
# TENANT_ORDER=random draws each session's tenant uniformly
# (router_sessions --tenant-order); cycle (the default) gives session s
# tenant s mod tenants, which lines up with round robin's turn through the
# workers, so that round robin keeps each tenant on the same workers by
# chance wherever it places only a session's first turn (session ids).
# SKEW > 0 draws each session's tenant with Zipf weights 1/(k+1)^SKEW
# (router_sessions --tenant-skew) instead of in turn: a few tenants far
# busier than the rest. The KV demand still counts every tenant's context.
# ROUTERS > 1 puts that many routers over the same workers, turn t of
# session s going through router (s + t) mod ROUTERS, as requests behind a
# Service over a deployment's router replicas land on any of them.
# SESSION_IDS=1 names each session in its requests (router_sessions
# --session-ids): the router keeps sessions on their workers and prices the
# live sessions a cache holds. DETAIL=1 prints, after the table, each run's hit ratio by turn, how many
# later turns stayed on the previous turn's worker, and the prompt tokens
# each worker computed (its kvmesh_worker_prefill_tokens_total): where a
# policy's work piled up; the first router's decisions by reason; the
# workers' peer fetches by result; and with equal caches the LRU replay
# (router_sessions): what a least-recently-used cache of a worker's size,
# bench/scale_sim's model of a worker, would have served of the requests
# each worker was sent, to set beside the hit ratio.
# USER_TOKENS and REPLY_TOKENS size each turn's user message and reply.
# TENANTS=N fixes the number of tenants, for agent-like traffic (few tenants,
# sessions of many turns that grow: e.g. TENANTS=2 CONTEXT=384 TURNS=8
# USER_TOKENS=160 REPLY_TOKENS=16 SESSION_IDS=1, as docs/benchmarks.md's
# "Agent sessions on real workers" runs it). Closed loop, each demand then
# sets the sessions in flight instead: the KV demand is what the live
# sessions hold, each tenant's context once plus each session's own turns,
# on average over its life (TURNS + 1) / 2 x (USER_TOKENS + REPLY_TOKENS),
# so CONCURRENCY = (demand x the cluster's KV tokens - TENANTS x CONTEXT) /
# that. Open loop (RATE > 0; RATE may then list several rates, "30 45 60",
# and DEMANDS is not used), sessions start at RATE / TURNS a second and the
# demand is what the run reaches: each row's first column is the KV the
# live sessions held on average over the fleet's (router_sessions), and
# its second the rate and the sessions in flight (mean, peak), which grow
# where a policy's fleet serves less than is offered.
# THINK_MS=T pauses T ms between a reply and the session's next turn
# (router_sessions --think-ms), as an agent runs its tools: sessions live
# longer, so an open-loop rate holds more of them, and more KV, at once.
# ARRIVALS=poisson makes the open loop random (router_sessions --arrivals):
# exponential gaps between session starts and exponential pauses of mean
# THINK_MS, the same draws for every policy; fixed (the default) is the
# regular pace. SEED=N (router_sessions --seed) draws other traffic of the
# same shape; 0 (the default) is the draw of the earlier runs.
# WORKER_FLAGS adds flags to every worker (e.g. "--kv-eviction adaptive").
# LOG_DIR=dir keeps each run's router logs there (POINT-POLICY-RUN-rN.err;
# with ROUTER_FLAGS="--log-level debug", every decision and what the policy
# saw of each worker) and its requests (router_sessions --trace:
# POINT-POLICY-RUN.trace), RUN counting the runs of the sweep.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
WORKERS=${WORKERS:-4}
KV_TOKENS=${KV_TOKENS:-4096}
CONTEXT=${CONTEXT:-1024}
USERS=${USERS:-4}
TURNS=${TURNS:-2}
USER_TOKENS=${USER_TOKENS:-32}
REPLY_TOKENS=${REPLY_TOKENS:-16}
CONCURRENCY=${CONCURRENCY:-8}
RATE=${RATE:-0}
SKEW=${SKEW:-0}
DEMANDS=${DEMANDS:-"0.5 1.0 1.5"}
POLICIES=${POLICIES:-"prefix prefix+fetch approx_prefix least_load round_robin"}
MODEL=${MODEL:-../shared/models/stories260K.gguf}
# One run per point: a demand, or with TENANTS in the open loop a rate.
points=$DEMANDS
if [[ -n ${TENANTS:-} && $RATE != 0 ]]; then
  points=$RATE
elif [[ $RATE == *" "* ]]; then
  echo "kv_pressure.sh: RATE lists several rates ($RATE); that needs TENANTS (open-loop agent sessions)" >&2
  exit 2
fi
tmp=$(mktemp -d)
# A sweep that stops early says where and why (twice one stopped after a
# run without a word; neither was reproduced).
trap 'echo "kv_pressure.sh: line $LINENO: \"$BASH_COMMAND\" failed (status $?)" >&2' ERR
trap 'status=$?; kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"
  [[ $status == 0 ]] || echo "kv_pressure.sh: stopped with status $status" >&2' EXIT
. bench/cluster_lib.sh
details=()
bytes_per_token=$("$B/cli/kvmesh" kv-plan -m "$MODEL" --context "$CONTEXT" --kv-type f16 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_token"])')
kv_sizes=($KV_TOKENS)
kv_total=0
KV_MEMORY_EACH=""
for ((i = 0; i < WORKERS; ++i)); do
  size=${kv_sizes[$i]:-${kv_sizes[0]}}
  kv_total=$((kv_total + size))
  KV_MEMORY_EACH+="$((bytes_per_token * size)) "
done
export KV_MEMORY_EACH
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "${ROUTERS:-1} router(s), $WORKERS workers with KV tokens $KV_TOKENS (bytes $KV_MEMORY_EACH), contexts of $CONTEXT tokens," \
  "tenant order ${TENANT_ORDER:-cycle}, tenant skew $SKEW," \
  "$USERS users per tenant x $TURNS turns, $([[ $RATE != 0 ]] && echo "open loop at $RATE requests/s, ${ARRIVALS:-fixed} arrivals" ||
  { [[ -n ${TENANTS:-} ]] && echo "sessions in flight set by the demand"; } || echo "concurrency $CONCURRENCY"), $(basename "$MODEL")"
echo
echo "| KV demand | tenants | policy | hit ratio | hit bound | capacity bound | placement bound | TTFT p50 ms | TTFT p90 ms | requests/s | max/min requests |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
# The placement bound needs equal caches.
worker_kv=${kv_sizes[0]}
for size in "${kv_sizes[@]}"; do [[ $size == "$worker_kv" ]] || worker_kv=0; done
runs=0 # the sweep's runs so far (LOG_DIR's file names)
for point in $points; do
  demand=$point
  rate=$RATE
  if [[ -n ${TENANTS:-} && $RATE != 0 ]]; then
    tenants=$TENANTS
    rate=$point
    demand=open
    label="$tenants, open loop $rate/s"
  elif [[ -n ${TENANTS:-} ]]; then
    tenants=$TENANTS
    CONCURRENCY=$(python3 -c "print(max(1, round(($demand * $kv_total - $tenants * $CONTEXT) / (($TURNS + 1) / 2 * ($USER_TOKENS + $REPLY_TOKENS)))))")
    label="$tenants, $CONCURRENCY in flight"
  else
    tenants=$(python3 -c "print(max(1, round($demand * $kv_total / $CONTEXT)))")
    label=$tenants
  fi
  for policy in $POLICIES; do
    start_cluster "$WORKERS" "$policy" --model "$MODEL" ${WORKER_FLAGS:-}
    trace=()
    if [[ -n ${LOG_DIR:-} ]]; then
      mkdir -p "$LOG_DIR"
      runs=$((runs + 1))
      trace=(--trace "$LOG_DIR/$point-$policy-$runs.trace")
    fi
    "$B/bench/router_sessions" --router "$ROUTER" \
      --sessions $((tenants * USERS)) --tenants "$tenants" --turns "$TURNS" \
      --concurrency "$CONCURRENCY" --rate "$rate" --tenant-skew "$SKEW" --tenant-order "${TENANT_ORDER:-cycle}" --system-tokens "$CONTEXT" --user-tokens "$USER_TOKENS" \
      --reply-tokens "$REPLY_TOKENS" --think-ms "${THINK_MS:-0}" --arrivals "${ARRIVALS:-fixed}" --seed "${SEED:-0}" \
      --session-ids "${SESSION_IDS:-0}" --fleet-kv-tokens "$kv_total" \
      --worker-kv-tokens "$([[ $policy == *+fetch ]] && echo 0 || echo "$worker_kv")" \
      ${trace[@]+"${trace[@]}"} >"$tmp/sessions.out" || true
    json=$(tail -1 "$tmp/sessions.out")
    if [[ -n ${LOG_DIR:-} ]]; then
      for f in "$tmp"/r*.err; do cp "$f" "$LOG_DIR/$point-$policy-$runs-$(basename "$f")"; done
    fi
    if [[ ${DETAIL:-0} == 1 ]]; then
      computed=()
      fetches=""
      for ((i = 0; i < WORKERS; ++i)); do
        curl -s "http://$(field http "$tmp/w$i.out")/metrics" >"$tmp/metrics" || true
        computed+=("$(awk '$1 == "kvmesh_worker_prefill_tokens_total" { print $2 }' "$tmp/metrics")")
        fetches+=$(awk -F'"' '/^kvmesh_worker_peer_fetches_total\{/ { split($3, v, " "); n[$2] += v[2] }
          END { for (r in n) printf "%s %d ", r, n[r] }' "$tmp/metrics")
      done
      # The workers' peer fetches by result, summed over the cluster.
      fetches=$(echo "$fetches" | awk '{ for (i = 1; i < NF; i += 2) n[$i] += $(i + 1) }
        END { for (r in n) printf "%s %d, ", r, n[r] }')
      reasons=$(curl -s "http://$(field http "$tmp/r0.out")/metrics" |
        awk -F'[{}]' '$1 == "kvmesh_router_decisions_total" { split($2, l, "reason=\""); sub(/".*/, "", l[2]);
          split($3, v, " "); printf "%s %s, ", l[2], v[1] }' || true)
      lru=$(grep -o '^least-recently-used caches.*' "$tmp/sessions.out" | sed 's/.*= //' || true)
      details+=("$([[ $demand == open ]] && echo "$rate/s" || python3 -c "print(f'{float($demand):.0%}')") $policy: $(grep '^cached by turn' "$tmp/sessions.out" || echo 'no per-turn hits (router_sessions failed)');"\
" prompt tokens computed per worker: ${computed[*]}; router 0's decisions: ${reasons%, }"\
"; peer fetches: ${fetches%, }${lru:+; the LRU replay: $lru}")
    fi
    if ! python3 -c 'import json,sys; json.loads(sys.argv[1])' "$json" 2>/dev/null; then
      echo "| ${demand} | $label | $policy | (router_sessions failed: see the workers' logs) | | | | | | | |"
      stop_cluster
      continue
    fi
    python3 - "$demand" "$label" "$policy" "$json" <<'PY'
import json, sys
d, t, p, j = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
fail = f" ({j['failures']} failed)" if j['failures'] else ""
if d == "open":  # the demand the run reached, and the sessions in flight
    d = j['kv_demand']
    t += f", {j['sessions_in_flight_mean']:.1f} (peak {j['sessions_in_flight_peak']}) in flight"
placement = f"{100 * j['placement_bound']:.1f}%" if j['placement_bound'] >= 0 else "-"
print(f"| {float(d):.0%} | {t} | {p} | {100 * j['hit_ratio']:.1f}% | {100 * j['hit_bound']:.1f}% | "
      f"{100 * j['capacity_bound']:.1f}% | "
      f"{placement} | {j['ttft_p50_ms']:.1f} | "
      f"{j['ttft_p90_ms']:.1f} | {j['requests_per_s']:.2f} | {j['max_load']}/{j['min_load']}{fail} |")
PY
    stop_cluster
  done
done
echo
if [[ ${DETAIL:-0} == 1 ]]; then
  printf '%s\n' "${details[@]}"
  echo
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
