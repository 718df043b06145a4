#!/usr/bin/env bash
# Checks router_sessions' reuse and capacity bounds against real workers
# (CTest router_sessions_hit_bound, about 17 s):
#   - one worker with room for everything, one session at a time: the worker
#     serves exactly what the bound says an unbounded cache could (so the
#     bound counts blocks as a worker does), and the capacity bound of ample
#     room is that same bound;
#   - round robin over two workers, where each turn lands on the other
#     worker than its session's last: under the bound, and with room for
#     everything exactly at the placement bound (what each worker could
#     serve of the requests it was sent), which is under the capacity bound;
#   - one worker with room for 16 blocks (256 tokens), three tenants of 6
#     blocks each, each session adding 5 of its own: it serves no more than
#     the capacity bound of 256 tokens, which is under the reuse bound;
#   - round robin on two such workers: no more than the placement bound,
#     itself no more than the capacity bound of 512 tokens;
#   - on those workers, what a least-recently-used cache of their size
#     serves of the same requests (router_sessions' LRU replay, the model of
#     a worker bench/scale_sim runs) is exactly what they served;
#   - the sessions in flight and the KV they held on average, as
#     router_sessions reports them: one session at a time holds the two
#     tenants' contexts and part of its own turns;
#   - the open loop's arrivals: at a fixed pace session s starts at
#     s x turns / rate seconds, with --arrivals poisson the starts are not
#     that regular (and --seed 1 draws others; --tenant-order random draws
#     the sessions' tenants), every request is still served, and an unknown
#     kind of arrivals or tenant order, an unknown option and an option
#     without its value are refused with a message that names them.
#
#   bench/hit_bound_check.sh BUILD_DIR MODEL
set -euo pipefail
cd "$(dirname "$0")/.."
B=$1
MODEL=$2
if [[ ! -f $MODEL ]]; then
  echo "SKIP: model $MODEL not found"
  exit 0
fi
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
. bench/cluster_lib.sh
sessions() {  # $1, $2: KV tokens of the fleet and of each worker for the bounds, $3: tenants
  "$B/bench/router_sessions" --router "$ROUTER" --sessions 6 --tenants "$3" --turns 3 \
    --concurrency 1 --system-tokens 100 --user-tokens 20 --reply-tokens 10 \
    --fleet-kv-tokens "$1" --worker-kv-tokens "$2" >"$tmp/out" || true
  tail -1 "$tmp/out"
}
start_cluster 1 prefix --model "$MODEL"
one=$(sessions 1048576 1048576 2)
for arrivals in fixed poisson; do
  "$B/bench/router_sessions" --router "$ROUTER" --sessions 8 --tenants 2 --turns 2 --rate 10 \
    --arrivals "$arrivals" --think-ms 20 --system-tokens 100 --user-tokens 20 --reply-tokens 10 \
    --trace "$tmp/$arrivals.trace" >"$tmp/$arrivals.out" || true
done
"$B/bench/router_sessions" --router "$ROUTER" --sessions 8 --tenants 2 --turns 2 --rate 10 \
  --arrivals poisson --seed 1 --tenant-order random --think-ms 20 --system-tokens 100 \
  --user-tokens 20 --reply-tokens 10 --trace "$tmp/seed1.trace" >"$tmp/seed1.out" || true
"$B/bench/router_sessions" --router "$ROUTER" --tenant-order zigzag >/dev/null 2>"$tmp/order.err" &&
  echo "FAIL: --tenant-order zigzag was accepted"
grep -q "tenant-order must be cycle or random, not 'zigzag'" "$tmp/order.err" ||
  echo "FAIL: --tenant-order zigzag was refused without naming it: $(cat "$tmp/order.err")"
"$B/bench/router_sessions" --router "$ROUTER" --arrivals burst >/dev/null 2>"$tmp/burst.err" &&
  echo "FAIL: --arrivals burst was accepted"
grep -q "arrivals must be fixed or poisson, not 'burst'" "$tmp/burst.err" ||
  echo "FAIL: --arrivals burst was refused without naming it: $(cat "$tmp/burst.err")"
# A mistyped option, or one without its value, is refused by name, not ignored.
"$B/bench/router_sessions" --router "$ROUTER" --sesions 4 >/dev/null 2>"$tmp/typo.err" &&
  echo "FAIL: --sesions was accepted"
grep -q "unknown option '--sesions'" "$tmp/typo.err" ||
  echo "FAIL: --sesions was refused without naming it: $(cat "$tmp/typo.err")"
"$B/bench/router_sessions" --router "$ROUTER" --seed >/dev/null 2>"$tmp/novalue.err" &&
  echo "FAIL: --seed without a value was accepted"
grep -q "option '--seed' needs a value" "$tmp/novalue.err" ||
  echo "FAIL: --seed without a value was refused without naming it: $(cat "$tmp/novalue.err")"
stop_cluster
start_cluster 2 round_robin --model "$MODEL"
two=$(sessions 2097152 1048576 2)
stop_cluster
bytes_per_token=$("$B/cli/kvmesh" kv-plan -m "$MODEL" --context 256 --kv-type f16 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_token"])')
KV_MEMORY_EACH=$((bytes_per_token * 256)) start_cluster 1 prefix --model "$MODEL" --context-length 256
small=$(sessions 256 256 3)
# Skewed tenants on the same worker: recency decides what stays, so a cache
# that kept blocks in the order stored (FIFO) would serve 9 points less.
"$B/bench/router_sessions" --router "$ROUTER" --sessions 12 --tenants 4 --tenant-skew 1 --turns 3 \
  --concurrency 1 --system-tokens 100 --user-tokens 20 --reply-tokens 10 \
  --fleet-kv-tokens 256 --worker-kv-tokens 256 >"$tmp/skew.out" || true
skew=$(tail -1 "$tmp/skew.out")
stop_cluster
KV_MEMORY_EACH="$((bytes_per_token * 256)) $((bytes_per_token * 256))" \
  start_cluster 2 round_robin --model "$MODEL" --context-length 256
tight=$(sessions 512 256 3)
stop_cluster
python3 - "$one" "$two" "$small" "$tight" "$skew" "$tmp" <<'PY'
import json, sys
one, two, small, tight, skew = (json.loads(a) for a in sys.argv[1:6])
tmp = sys.argv[6]
print(f"one worker: hit ratio {one['hit_ratio']:.4f}, bound {one['hit_bound']:.4f}, capacity bound {one['capacity_bound']:.4f}")
print(f"round robin on two: hit ratio {two['hit_ratio']:.4f}, bound {two['hit_bound']:.4f}, "
      f"capacity bound {two['capacity_bound']:.4f}, placement bound {two['placement_bound']:.4f}")
print(f"one worker of 256 tokens: hit ratio {small['hit_ratio']:.4f}, bound {small['hit_bound']:.4f}, "
      f"capacity bound {small['capacity_bound']:.4f}")
print(f"round robin on two of 256 tokens: hit ratio {tight['hit_ratio']:.4f}, "
      f"placement bound {tight['placement_bound']:.4f}, capacity bound {tight['capacity_bound']:.4f}")
failures = []
def check(holds, message):
    if not holds:
        print("FAIL: " + message)
        failures.append(message)
check(not (one["failures"] or two["failures"] or small["failures"] or tight["failures"]),
      "requests failed")
# The reuse bound.
check(0.5 < one["hit_bound"] < 1,
      "the bound of six sessions over two shared prefixes should be over half")
check(abs(one["hit_ratio"] - one["hit_bound"]) <= 1e-4,
      "one worker that holds everything should serve exactly the bound")
check(abs(two["hit_bound"] - one["hit_bound"]) <= 1e-4, "the same traffic should have the same bound")
check(two["hit_ratio"] < two["hit_bound"] - 0.05,
      "round robin moves every turn and should fall under the bound")
# The capacity and placement bounds.
check(abs(one["capacity_bound"] - one["hit_bound"]) <= 1e-4,
      "with room for everything the capacity bound should be the reuse bound")
check(abs(one["placement_bound"] - one["capacity_bound"]) <= 1e-4,
      "one worker's placement bound should be the capacity bound")
check(abs(two["hit_ratio"] - two["placement_bound"]) <= 1e-4,
      "two workers with room for everything should serve exactly the placement bound")
check(two["placement_bound"] < two["capacity_bound"] - 0.05, "round robin's placements should cost reuse")
check(small["capacity_bound"] < small["hit_bound"] - 0.02,
      "256 tokens of cache should not hold all the traffic reuses")
check(small["hit_ratio"] <= small["capacity_bound"] + 1e-4,
      "a worker of 256 tokens served more than the capacity bound")
check(tight["hit_ratio"] <= tight["placement_bound"] + 1e-4,
      "two workers of 256 tokens served more than their placement bound")
check(tight["placement_bound"] <= tight["capacity_bound"] + 1e-4,
      "a placement bound over the capacity bound")
# The LRU replay: one request at a time, a worker of 256 tokens evicts as a
# least-recently-used cache of 16 blocks does, the model bench/scale_sim
# runs, so the replay of its requests serves exactly what it served.
print(f"LRU replay: one worker of 256 tokens {small['lru_replay']:.4f}, "
      f"round robin on two {tight['lru_replay']:.4f}")
check(small["hit_ratio"] < small["hit_bound"] - 0.02, "a worker of 256 tokens should evict")
check(abs(small["lru_replay"] - small["hit_ratio"]) <= 1e-4,
      "a worker of 256 tokens should serve what an LRU cache of its size serves")
check(abs(tight["lru_replay"] - tight["hit_ratio"]) <= 1e-4,
      "two workers of 256 tokens should serve what LRU caches of their size serve")
check(abs(two["lru_replay"] - two["placement_bound"]) <= 1e-4,
      "caches with room for everything: the LRU replay should be the placement bound")
# Within a point where recency decides: the replay leaves out the block a
# request's partly filled tail takes from the pool, which moves it 0.3-0.6
# points here; keeping blocks in the order stored instead moves it 9.
print(f"LRU replay, skewed tenants on one worker of 256 tokens: {skew['lru_replay']:.4f} "
      f"against the worker's {skew['hit_ratio']:.4f}")
check(not skew["failures"] and skew["hit_ratio"] < skew["hit_bound"] - 0.02,
      "skewed tenants on a worker of 256 tokens should be served, with evictions")
check(abs(skew["lru_replay"] - skew["hit_ratio"]) <= 0.01,
      "skewed tenants: a worker of 256 tokens should serve within a point of an LRU cache of its size")
# The sessions in flight and the KV they held: one at a time; two tenants'
# 100-token contexts, and each session's own turns, at most 3 x 30 tokens.
print(f"one worker: sessions in flight mean {one['sessions_in_flight_mean']:.2f}, "
      f"peak {one['sessions_in_flight_peak']}, KV demand {one['kv_demand'] * 1048576:.1f} tokens")
check(one["sessions_in_flight_peak"] == 1, "one session at a time, but more were in flight")
check(0.5 < one["sessions_in_flight_mean"] <= 1.0001,
      "one session at a time should be in flight for most of the run")
check(200 < one["kv_demand"] * 1048576 <= 290 + 1e-3,
      "the live KV should be the two contexts and part of one session's 90 own tokens")
# The arrivals: 8 sessions of 2 turns at 10 requests/s start 0.2 s apart
# at a fixed pace; exponential gaps of that mean are not that regular.
for arrivals in ("fixed", "poisson"):
    with open(f"{tmp}/{arrivals}.out") as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    starts, served = {}, 0
    with open(f"{tmp}/{arrivals}.trace") as f:
        for line in f:
            served += 1
            sent, session, _, turn = line.split("\t")[:4]
            if turn == "0":
                starts[int(session)] = float(sent)
    off = max(abs(starts[s] - s * 0.2) for s in starts) if starts else -1
    print(f"{arrivals} arrivals: {served} requests served, {result['failures']} failed, "
          f"largest distance of a session's start from s x 0.2 s: {off:.3f} s")
    check(result["failures"] == 0 and served == 16 and len(starts) == 8,
          f"{arrivals} arrivals: all 8 sessions x 2 turns should be served")
    if arrivals == "fixed":
        check(0 <= off < 0.1, "fixed arrivals should start session s at s x turns / rate")
    else:
        check(off > 0.1, "poisson arrivals started every session at the fixed pace")
        poisson_starts = starts
# Another seed draws other starts, all served; and --tenant-order random
# draws each session's tenant instead of cycling through them (s mod 2).
with open(f"{tmp}/seed1.trace") as f:
    first = [l.split("\t") for l in f if l.split("\t")[3] == "0"]
seed1 = {int(l[1]): float(l[0]) for l in first}
tenant = {int(l[1]): int(l[2]) for l in first}
moved = max(abs(seed1[s] - poisson_starts[s]) for s in seed1) if len(seed1) == 8 else -1
print(f"poisson arrivals with --seed 1: {len(seed1)} sessions started, the largest move of a "
      f"start from seed 0's: {moved:.3f} s; tenants drawn: {[tenant[s] for s in sorted(tenant)]}")
check(len(seed1) == 8 and moved > 0.1, "--seed 1 should start the 8 sessions at other times")
check(sorted(set(tenant.values())) == [0, 1] and any(tenant[s] != s % 2 for s in tenant),
      "--tenant-order random should draw both tenants, not in turn")
sys.exit(1 if failures else 0)
PY
