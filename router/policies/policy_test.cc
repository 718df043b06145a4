#include "router/policies/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "router/worker_load.h"

namespace kvmesh::router {
namespace {

WorkerView W(int slot, int running, int cached = 0, double rate = 1000) {
  WorkerView v;
  v.slot = slot;
  v.id = *InternWorkerId("w" + std::to_string(slot));  // a view's id outlives it
  v.running = running;
  v.cached_tokens = cached;
  v.prefill_tokens_per_s = rate;
  return v;
}

TEST(PolicyTest, RegistryByName) {
  EXPECT_EQ((*MakePolicy("prefix"))->name(), "prefix");
  EXPECT_EQ((*MakePolicy("least_load"))->name(), "least_load");
  EXPECT_EQ((*MakePolicy("round_robin"))->name(), "round_robin");
  EXPECT_EQ((*MakePolicy("approx_prefix"))->name(), "approx_prefix");
  auto bad = MakePolicy("random");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              ::testing::HasSubstr("choose prefix, least_load, round_robin or approx_prefix"));
}

TEST(PolicyTest, RoundRobinCycles) {
  auto p = MakeRoundRobinPolicy();
  std::vector<WorkerView> ws = {W(0, 5), W(1, 0), W(2, 9)};
  std::vector<int> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(p->Choose({10, ws, {}, 0}).index);
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(PolicyTest, LeastLoadPicksFewestRequests) {
  auto p = MakeLeastLoadPolicy();
  std::vector<WorkerView> ws = {W(0, 5), W(1, 2), W(2, 2)};
  ws[2].queued_prefill_tokens = -1;  // tie broken by queued prefill
  EXPECT_EQ(p->Choose({10, ws, {}, 0}).index, 2);
  ws[1].inflight = 0;
  ws[0].running = 0;
  EXPECT_EQ(p->Choose({10, ws, {}, 0}).index, 0);
}

TEST(PolicyTest, PrefixPrefersTheCacheHolder) {
  auto p = MakePrefixPolicy({});
  // 1000-token prompt; w1 holds 960 of it and runs one more request.
  std::vector<WorkerView> ws = {W(0, 0), W(1, 1, 960)};
  Decision d = p->Choose({1000, ws, {}, 0});
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.reason, "prefix_hit");
  // Without a hit, the idle worker.
  ws[1].cached_tokens = 0;
  d = p->Choose({1000, ws, {}, 0});
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.reason, "min_cost");
}

TEST(PolicyTest, PrefixSpreadsNewPrefixesOverTheCaches) {
  auto p = MakePrefixPolicy({});
  // Equal cost within 10% (speeds differ by 5%): the worker holding fewer
  // cached blocks takes the new prefix, whatever the turn.
  std::vector<WorkerView> ws = {W(0, 0, 0, 1050), W(1, 0, 0, 1000)};
  ws[0].blocks_cached = 40;
  ws[1].blocks_cached = 10;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p->Choose({500, ws, {}, 0}).index, 1);
  // Fully equal: taken in turn.
  ws[0].blocks_cached = ws[1].blocks_cached = 0;
  std::set<int> picked;
  for (int i = 0; i < 4; ++i) picked.insert(p->Choose({500, ws, {}, 0}).index);
  EXPECT_EQ(picked.size(), 2u);
}

TEST(PolicyTest, AnUnmeasuredWorkerIsAssumedAsFastAsTheFastest) {
  auto p = MakePrefixPolicy({});
  // w0 measured 10000 tokens/s; w1 has not measured yet. Without a cache hit
  // anywhere they tie, so the new prefix goes to the worker with fewer cached
  // blocks rather than to the only one with a measurement.
  std::vector<WorkerView> ws = {W(0, 0, 0, 10000), W(1, 0, 0, 0)};
  ws[0].blocks_cached = 30;
  EXPECT_EQ(p->Choose({400, ws, {}, 0}).index, 1);
}

TEST(PolicyTest, PrefixWeighsPrefillSpeed) {
  auto p = MakePrefixPolicy({});
  // Same cache, w0 four times faster at prefill: w0 wins despite one request more.
  std::vector<WorkerView> ws = {W(0, 1, 0, 4000), W(1, 0, 0, 1000)};
  EXPECT_EQ(p->Choose({2000, ws, {}, 0}).index, 0);
}

TEST(PolicyTest, AHostTierHitCostsItsRestoreNotARecompute) {
  // 8000-token prompt. w0 holds 6000 tokens, all in its host tier, restored
  // at 40000 tokens/s (0.15 s); w1 holds 4000 on its device; prefill 1000/s.
  auto p = MakePrefixPolicy({});
  WorkerView host = W(0, 0, 6000);
  host.host_cached_tokens = 6000;
  host.host_restore_tokens_per_s = 40000;
  std::vector<WorkerView> ws = {host, W(1, 0, 4000)};
  Decision d = p->Choose({8000, ws, {}, 0});
  EXPECT_EQ(d.index, 0);  // 2.15 s against 4 s
  EXPECT_EQ(d.reason, "prefix_hit");
  // A slow restore (2000 tokens/s: 3 s) makes the host hit dearer than w1's
  // device hit plus the recompute (4 s is not within 10% of 5 s).
  ws[0].host_restore_tokens_per_s = 2000;
  EXPECT_EQ(p->Choose({8000, ws, {}, 0}).index, 1);
  // Unmeasured restore speed: the host blocks count as misses.
  ws[0].host_restore_tokens_per_s = 0;
  EXPECT_EQ(p->Choose({8000, ws, {}, 0}).index, 1);
}

TEST(PolicyTest, IgnoringTheHostTierTreatsItsBlocksAsMisses) {
  PrefixPolicyWeights w;
  w.use_host_tier = false;
  auto p = MakePrefixPolicy(w);
  WorkerView host = W(0, 0, 6000);
  host.host_cached_tokens = 6000;
  host.host_restore_tokens_per_s = 40000;
  std::vector<WorkerView> ws = {host, W(1, 0, 4000)};
  Decision d = p->Choose({8000, ws, {}, 0});
  EXPECT_EQ(d.index, 1);
}

TEST(PolicyTest, GuardStopsOneHotPrefixFromMeltingAWorker) {
  PrefixPolicyWeights weights;
  weights.tokens_per_running_request = 1;  // make the cache dominate the cost
  auto p = MakePrefixPolicy(weights);
  // w0 holds the whole prompt but already runs 20 requests; w1 runs 2.
  std::vector<WorkerView> ws = {W(0, 20, 4000), W(1, 2)};
  Decision d = p->Choose({4096, ws, {}, 0});
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.reason, "load_guard");
  // Mildly uneven load: the cache still wins.
  ws[0].running = 9;  // limit = 2 * (2 + 1) + 4 = 10
  d = p->Choose({4096, ws, {}, 0});
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.reason, "prefix_hit");
}

// Block hashes of a prompt made of `blocks` blocks of 16 tokens, the first
// `shared` of them from a common prefix (seed 1) and the rest from `seed`.
std::vector<BlockHash> Prompt(int blocks, int shared, int seed) {
  std::vector<int32_t> tokens;
  for (int b = 0; b < blocks; ++b) {
    for (int i = 0; i < 16; ++i) tokens.push_back((b < shared ? 1 : seed) * 1000 + b * 16 + i);
  }
  return HashFullBlocks(RootHash("model"), tokens, 16);
}

Decision ChooseApprox(Policy& p, const std::vector<BlockHash>& hashes,
                      const std::vector<WorkerView>& ws) {
  return p.Choose({static_cast<int32_t>(hashes.size()) * 16 + 1, ws, hashes, 16});
}

// Under memory pressure a miss placed on a full cache evicts cached prefixes
// that someone will recompute, and is priced so: a partial holder that is
// somewhat busier keeps the request instead of an idle worker whose cache is
// full; with the weight at 0 (or an empty cache) the idle one takes it.
TEST(PolicyTest, PrefixPricesWhatAMissWouldEvict) {
  auto full = [](WorkerView v) {
    v.blocks_total = 256;
    v.blocks_free = 256;
    v.blocks_cached = 256;  // every free block holds a cached prefix
    return v;
  };
  std::vector<WorkerView> ws = {full(W(0, 6, 256)), full(W(1, 0, 0))};
  const std::vector<BlockHash> none;
  auto choose = [&](Policy& p) { return p.Choose({1105, ws, none, 16}); };
  auto priced = MakePrefixPolicy({});
  EXPECT_EQ(choose(*priced).index, 0);
  auto unpriced = MakePrefixPolicy({.displacement_weight = 0});
  EXPECT_EQ(choose(*unpriced).index, 1);
  // Room on the idle worker: nothing would be evicted there.
  ws[1].blocks_cached = 0;
  EXPECT_EQ(choose(*priced).index, 1);
}

// A new session whose tenant prefix one worker holds, but whose cache that
// worker's live sessions already fill: each token it brings there evicts a
// live session's context (which that session recomputes on its next turn),
// so it goes to a worker with room even though that one recomputes the
// prefix. Without live sessions the holder keeps it.
TEST(PolicyTest, PrefixPricesTheLiveSessionsACacheHolds) {
  const std::vector<BlockHash> none;
  auto p = MakePrefixPolicy({});
  // 13,500 tokens, 12,000 of them a tenant prefix w0 holds; 8,192 blocks of
  // 16 tokens each, with blocks free (sessions between turns, or evicted).
  std::vector<WorkerView> ws = {W(0, 0, 12000), W(1, 0, 0)};
  for (WorkerView& v : ws) {
    v.blocks_total = v.blocks_free = 8192;
    v.blocks_cached = 0;
  }
  EXPECT_EQ(p->Choose({13500, ws, none, 16}).index, 0);
  ws[0].session_tokens = 8192 * 16;  // w0's live sessions fill its cache
  EXPECT_EQ(p->Choose({13500, ws, none, 16}).index, 0) << "the 1,500 uncached tokens cost 3,000";
  // The same with a long first prompt: 40,000 tokens to compute on w0
  // evict as many of its live sessions' tokens; w1 computes 52,000 but
  // evicts none.
  EXPECT_EQ(p->Choose({52000, ws, none, 16}).index, 1);
  EXPECT_EQ(MakePrefixPolicy({.live_session_weight = 0})->Choose({52000, ws, none, 16}).index, 0);
  ws[0].session_tokens = 0;
  EXPECT_EQ(p->Choose({52000, ws, none, 16}).index, 0);
  // A quarter full of live sessions, a quarter of the price: 40,000 +
  // 10,000 against 52,000.
  ws[0].session_tokens = 8192 * 4;
  EXPECT_EQ(p->Choose({52000, ws, none, 16}).index, 0);
  ws[0].session_tokens = 8192 * 16;
  EXPECT_EQ(MakePrefixPolicy({.displacement_weight = 0})->Choose({52000, ws, none, 16}).index, 0);
}

// A new tenant's first request, held nowhere. w2 measured twice the others'
// prefill speed (on a shared machine, a worker computing alone measures
// fast), but its cache is full and its live sessions fill it, while w0's
// cache is half empty and its live sessions fill a quarter. What a request evicts is recomputed
// later by whichever worker its owner's next turn goes to, so it is priced at the fleet's median
// speed, not at w2's: otherwise the fast worker takes every tenant no cache holds until its own
// cache thrashes (bench/kv_pressure.sh with session ids at 100% demand: one worker computed 44,000
// prompt tokens, another 4,600).
TEST(PolicyTest, EvictionsArePricedAtTheFleetsSpeedNotTheFastWorkers) {
  const std::vector<BlockHash> none;
  std::vector<WorkerView> ws = {W(0, 0, 0, 12000), W(1, 0, 0, 12000), W(2, 0, 0, 24000)};
  for (WorkerView& v : ws) {
    v.blocks_total = v.blocks_free = v.blocks_cached = 256;  // every cache full
    v.session_tokens = 4096;
  }
  ws[0].session_tokens = 1024;
  ws[0].blocks_cached = 128;  // half of w0's cache empty
  auto p = MakePrefixPolicy({});
  // w0: 1,057 / 12,000 + 264 / 12,000 = 0.110 s; w2: 1,057 / 24,000 +
  // 1,057 / 12,000 = 0.132 s (priced at its own speed, 0.088 s).
  EXPECT_EQ(p->Choose({1057, ws, none, 16}).index, 0);
  // With room on w2 (its live sessions a quarter of its cache, blocks empty)
  // it is the fastest and takes it.
  ws[2].session_tokens = 1024;
  ws[2].blocks_cached = 64;
  EXPECT_EQ(p->Choose({1057, ws, none, 16}).index, 2);
}

// A new session held nowhere, on a fleet of two slow workers and one three
// times as fast. Every cache is full; the slow ones' live sessions fill half
// of theirs, the fast one's all of its own, so it pays for evicting 1,200
// tokens it will recompute: 1,200 / 30,000 + 1,200 / 10,000 = 0.16 s,
// against 1,200 / 10,000 + 600 / 10,000 = 0.18 s on a slow one. But the fast
// worker measures that half of what it stores it had evicted within one
// turnover: its cache thrashes, each token it evicts is recomputed and
// evicts another, about twice in all, and the part of that its speed would
// hide (1 - 10,000 / 30,000) counts: its evictions count 1 + ⅔ × 0.5 / 0.5
// times (0.24 s). The scale
// simulator's fleet of three slow workers to one fast at half its KV demand
// drew the sessions onto the fast workers' caches without this (p90 1.30 s
// against 0.47 s with it; docs/scale.md, "Unequal speeds").
TEST(PolicyTest, ACacheThatThrashesWhileOthersHaveRoomCostsMore) {
  const std::vector<BlockHash> none;
  std::vector<WorkerView> ws = {W(0, 0, 0, 10000), W(1, 0, 0, 10000), W(2, 0, 0, 30000)};
  for (WorkerView& v : ws) {
    v.blocks_total = v.blocks_free = v.blocks_cached = 256;  // 4,096 tokens, all cached
    v.session_tokens = 2048;
  }
  ws[2].session_tokens = 4096;
  auto p = MakePrefixPolicy({});
  EXPECT_EQ(p->Choose({1200, ws, none, 16}).index, 2) << "no refills measured";
  ws[2].refill_ratio = 0.5;
  EXPECT_NE(p->Choose({1200, ws, none, 16}).index, 2);
  EXPECT_EQ(MakePrefixPolicy({.refill_weight = 0})->Choose({1200, ws, none, 16}).index, 2);
  // Refilling no more than the others (the median) is no thrash of its own.
  for (WorkerView& v : ws) v.refill_ratio = 0.5;
  EXPECT_EQ(p->Choose({1200, ws, none, 16}).index, 2);
  // Once the live sessions exceed the caches together, some cache thrashes
  // wherever the request goes, and refills are not priced.
  ws[0].refill_ratio = ws[1].refill_ratio = 0;
  ws[2].session_tokens = 8192;
  EXPECT_EQ(p->Choose({1200, ws, none, 16}).index, 2);
  // A worker no faster than the median pays no refill price: with equal
  // speeds the live-session term keeps each cache's share. Here the others'
  // sessions fill their caches, and half of w2's is empty: 0.18 s against
  // 0.24 s, however much w2 refills.
  ws[2].prefill_tokens_per_s = 10000;
  ws[0].session_tokens = ws[1].session_tokens = 4096;
  ws[2].session_tokens = 2048;
  ws[2].blocks_cached = 128;
  ws[2].refill_ratio = 0.8;
  EXPECT_EQ(p->Choose({1200, ws, none, 16}).index, 2);
  ws[2].prefill_tokens_per_s = 30000;
  ws[2].blocks_cached = 256;
  ws[0].session_tokens = ws[1].session_tokens = 2048;
  ws[2].session_tokens = 4096;
  // Without session ids the router cannot tell whether the sessions fit,
  // and refills are not priced either.
  for (WorkerView& v : ws) v.session_tokens = 0;
  ws[2].refill_ratio = 0.5;
  EXPECT_EQ(p->Choose({1200, ws, none, 16}).index, 2);
  // A ratio past max_refill_ratio counts as that (no division by zero).
  for (WorkerView& v : ws) v.session_tokens = 2048;
  ws[2].session_tokens = 4096;
  ws[2].refill_ratio = 1.0;
  EXPECT_NE(p->Choose({1200, ws, none, 16}).index, 2);
}

// A named session brings its turns to come: priced at the live sessions'
// mean context, they tip a new session away from a cache its live sessions
// already fill most of, though that worker's queue is shorter.
TEST(PolicyTest, ANamedSessionGoesWhereItsTurnsFit) {
  const std::vector<BlockHash> none;
  std::vector<WorkerView> ws = {W(0, 0, 400, 10000), W(1, 0, 400, 10000)};
  for (WorkerView& v : ws) {
    v.blocks_total = v.blocks_free = 256;  // 4,096 tokens, 3,072 of them empty
    v.blocks_cached = 64;
  }
  ws[0].session_tokens = 3200;
  ws[1].session_tokens = 1600;
  ws[1].queued_prefill_tokens = 300;
  auto p = MakePrefixPolicy({.session_growth_weight = 1});
  // The request alone: 160 uncached tokens, 125 and 62 of them evicting live
  // context; w1's queue decides (0.029 s against 0.052 s).
  EXPECT_EQ(p->Choose({560, ws, none, 16}).index, 0);
  // With 1,000 tokens to come: 906 and 453 (0.107 s against 0.091 s).
  EXPECT_EQ(p->Choose({560, ws, none, 16, 1000}).index, 1);
  // Off by default.
  EXPECT_EQ(MakePrefixPolicy({})->Choose({560, ws, none, 16, 1000}).index, 0);
}

// Live named sessions stay where they are and come back: a worker with
// five of them will get five more turns, which its queue of the moment does
// not show. Priced as work ahead, those turns send a new session to the
// worker with one live session, though that one is prefilling now, and even
// to one that must first compute the prompt's prefix; a long prefix still
// outweighs them until its holder carries many more sessions. Once the live
// sessions exceed the caches, the term is left out.
TEST(PolicyTest, ANewSessionQueuesBehindTheTurnsOfTheLiveSessions) {
  const std::vector<BlockHash> none;
  std::vector<WorkerView> ws = {W(0, 0, 384, 10000), W(1, 0, 384, 10000)};
  for (WorkerView& v : ws) v.blocks_total = v.blocks_free = 256;  // 4,096 tokens each
  ws[0].live_sessions = 5;
  ws[0].session_tokens = 1500;
  ws[1].live_sessions = 1;
  ws[1].session_tokens = 300;
  ws[1].queued_prefill_tokens = 300;
  // 176 uncached tokens each, 64 and 13 of them evicting live context: w1's
  // queue alone decides (240 against 489).
  EXPECT_EQ(MakePrefixPolicy({})->Choose({560, ws, none, 16}).index, 0);
  // With turns of 176 tokens to come: 240 + 5 × 176 = 1,120 against
  // 489 + 176 = 665.
  EXPECT_EQ(MakePrefixPolicy({})->Choose({560, ws, none, 16, 0, 176}).index, 1);
  EXPECT_EQ(MakePrefixPolicy({.session_load_weight = 0})->Choose({560, ws, none, 16, 0, 176}).index,
            0);
  // w1 without the prefix: 560 + 41 + 176 = 777, still under 1,120.
  ws[1].cached_tokens = 0;
  ws[1].queued_prefill_tokens = 0;
  EXPECT_EQ(MakePrefixPolicy({})->Choose({560, ws, none, 16, 0, 176}).index, 1);
  // Live sessions past the caches (8,300 tokens in 8,192): left out.
  ws[0].session_tokens = 8000;
  EXPECT_EQ(MakePrefixPolicy({})->Choose({560, ws, none, 16, 0, 176}).index, 0);

  // A 12,000-token prefix on w0 only, turns of 1,900 tokens: 500 + 76 + 5 ×
  // 1,900 = 10,076 against 12,500 on the empty w1, so the session stays...
  std::vector<WorkerView> long_prefix = {W(0, 0, 12000, 10000), W(1, 0, 0, 10000)};
  for (WorkerView& v : long_prefix) v.blocks_total = v.blocks_free = 4096;  // 65,536 tokens
  long_prefix[0].live_sessions = 5;
  long_prefix[0].session_tokens = 10000;
  EXPECT_EQ(MakePrefixPolicy({})->Choose({12500, long_prefix, none, 16, 0, 1900}).index, 0);
  // ...until its holder has seven more sessions than w1 (13,907).
  long_prefix[0].live_sessions = 7;
  long_prefix[0].session_tokens = 14000;
  EXPECT_EQ(MakePrefixPolicy({})->Choose({12500, long_prefix, none, 16, 0, 1900}).index, 1);
}

// A burst routed before any load report: the router's own requests still
// prefilling on a worker count as its queue.
TEST(PolicyTest, PrefixCountsItsOwnRequestsNotYetReported) {
  const std::vector<BlockHash> none;
  auto p = MakePrefixPolicy({});
  std::vector<WorkerView> ws = {W(0, 0, 2000), W(1, 0, 0)};
  EXPECT_EQ(p->Choose({3000, ws, none, 16}).index, 0);
  ws[0].prefill_inflight_tokens = 60000;  // one long prompt sent, no report since
  EXPECT_EQ(p->Choose({3000, ws, none, 16}).index, 1);
  // A later report that has it (and more) counts once, not twice.
  ws[0].queued_prefill_tokens = 61000;
  ws[1].queued_prefill_tokens = 58000;
  EXPECT_EQ(p->Choose({3000, ws, none, 16}).index, 0);
}

// Workers admit the waiting request with the most cached tokens first, so a
// returning session whose holder's queue is other tenants' misses waits
// about one step there, and stays; a request the holder lacks still waits
// for the whole queue, and goes elsewhere.
TEST(PolicyTest, ACachedRequestOvertakesItsHoldersQueue) {
  const std::vector<BlockHash> none;
  auto p = MakePrefixPolicy({});
  // A 1104-token turn; w0 holds 1056 of it behind 2100 queued tokens (two
  // misses), w1 has 1050 queued; both caches full.
  std::vector<WorkerView> ws = {W(0, 2, 1056), W(1, 1, 0)};
  for (WorkerView& v : ws) {
    v.blocks_total = v.blocks_free = v.blocks_cached = 256;
    v.step_tokens = 512;
  }
  ws[0].queued_prefill_tokens = 2100;
  ws[1].queued_prefill_tokens = 1050;
  Decision d = p->Choose({1104, ws, none, 16});
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.reason, "prefix_hit");
  // Priced at the whole queue (a step as long as the queue), w0's 4,000
  // queued tokens would outweigh the 1104 w1 recomputes and the 1104 its
  // recompute evicts; at one step they do not.
  ws[0].queued_prefill_tokens = 4000;
  EXPECT_EQ(p->Choose({1104, ws, none, 16}).index, 0);
  ws[0].step_tokens = ws[1].step_tokens = 1 << 20;
  EXPECT_EQ(p->Choose({1104, ws, none, 16}).index, 1);
  // Unreported steps: the configured one.
  ws[0].step_tokens = ws[1].step_tokens = 0;
  EXPECT_EQ(p->Choose({1104, ws, none, 16}).index, 0);
  EXPECT_EQ(
      MakePrefixPolicy({.fetch_holder_step_tokens = 1 << 20})->Choose({1104, ws, none, 16}).index,
      1);
  // A prompt w0 lacks waits for all of its queue.
  ws[0].cached_tokens = 0;
  EXPECT_EQ(p->Choose({1104, ws, none, 16}).index, 1);
}

// A busy holder's prefix is fetched by an idle worker when fetching is
// cheaper than computing; the hint names the holder and the blocks.
TEST(PolicyTest, PeerFetchPullsABusyHoldersPrefix) {
  const std::vector<BlockHash> none;
  // A 4000-token prompt; w1 holds 3200 of it behind 20000 queued tokens.
  std::vector<WorkerView> ws = {W(0, 0), W(1, 2, 3200), W(2, 1)};
  ws[1].queued_prefill_tokens = 20000;
  auto choose = [&](Policy& p) { return p.Choose({4000, ws, none, 16}); };

  auto off = MakePrefixPolicy({});
  Decision d = choose(*off);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.fetch_from, -1);

  auto on = MakePrefixPolicy({.peer_fetch = true});
  d = choose(*on);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.reason, "peer_fetch");
  EXPECT_EQ(d.fetch_from, 1);
  EXPECT_EQ(d.fetch_first_block, 0);
  EXPECT_EQ(d.fetch_end_block, 200);

  // What w0 holds already is not fetched.
  ws[0].cached_tokens = 1600;
  d = choose(*on);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.fetch_first_block, 100);
  EXPECT_EQ(d.fetch_end_block, 200);

  // Blocks w0 holds only in its host tier are fetched too: fetched pages go
  // to the device, and a prefix is device blocks first.
  ws[0].host_cached_tokens = 800;
  ws[0].host_restore_tokens_per_s = 4000;
  d = choose(*on);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.fetch_from, 1);
  EXPECT_EQ(d.fetch_first_block, 50);
  EXPECT_EQ(d.fetch_end_block, 200);
  ws[0].host_cached_tokens = 0;

  // A fetch slower than computing is not worth it.
  ws[0].peer_fetch_tokens_per_s = 500;
  ws[2].peer_fetch_tokens_per_s = 500;
  d = choose(*on);
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.fetch_from, -1);
  EXPECT_EQ(d.reason, "prefix_hit");
}

TEST(PolicyTest, PeerFetchLeavesAnIdleHolderItsOwnRequest) {
  const std::vector<BlockHash> none;
  auto on = MakePrefixPolicy({.peer_fetch = true});
  // The idle holder is cheapest: nothing to fetch.
  std::vector<WorkerView> ws = {W(0, 0), W(1, 0, 3200)};
  Decision d = on->Choose({4000, ws, none, 16});
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.fetch_from, -1);
  // Less than a block more than w0 has: nothing to fetch either.
  ws = {W(0, 0, 3200), W(1, 3, 3210)};
  d = on->Choose({4000, ws, none, 16});
  EXPECT_EQ(d.fetch_from, -1);
  // A busy holder's fetch also waits for its step: a holder with a long
  // queue and a slow prefill makes the fetch dearer than computing 160
  // tokens.
  ws = {W(0, 0, 3040), W(1, 9, 3200, 100)};
  ws[1].queued_prefill_tokens = 100000;
  d = on->Choose({4000, ws, none, 16});
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.fetch_from, -1);
}

// A prompt goes where its prefix was sent before, once that prefix covers
// the threshold; otherwise to the worker the policy has sent least.
TEST(PolicyTest, ApproxPrefixFollowsWhatItRouted) {
  auto p = MakeApproxPrefixPolicy({});
  const std::vector<WorkerView> ws = {W(0, 0), W(1, 0), W(2, 0)};
  const Decision first = ChooseApprox(*p, Prompt(8, 4, 2), ws);
  EXPECT_EQ(first.reason, "approx_miss");
  EXPECT_EQ(first.index, 0);  // nothing remembered anywhere: the first
  const Decision other = ChooseApprox(*p, Prompt(8, 0, 3), ws);
  EXPECT_EQ(other.reason, "approx_miss");
  EXPECT_EQ(other.index, 1);  // worker 0 remembers 8 blocks, 1 and 2 none
  // The first prompt extended: 8 of its 12 blocks were sent to worker 0.
  const Decision again = ChooseApprox(*p, Prompt(12, 4, 2), ws);
  EXPECT_EQ(again.reason, "approx_hit");
  EXPECT_EQ(again.index, 0);
  // Only the 4 shared blocks of 12 (64 of 193 tokens) are on worker 0: under
  // the 0.5 threshold, so worker 2, which remembers nothing, takes it.
  const Decision weak = ChooseApprox(*p, Prompt(12, 4, 5), ws);
  EXPECT_EQ(weak.reason, "approx_miss");
  EXPECT_EQ(weak.index, 2);
}

// Equal remembered prefixes go to the less loaded worker.
TEST(PolicyTest, ApproxPrefixBreaksTiesByLoad) {
  auto p = MakeApproxPrefixPolicy({.match_threshold = 0.25});
  ChooseApprox(*p, Prompt(8, 4, 6), {W(0, 0)});
  ChooseApprox(*p, Prompt(8, 4, 7), {W(1, 0)});
  // 4 shared blocks (64 of 193 tokens, over 0.25) on workers 0 and 1.
  const Decision tie = ChooseApprox(*p, Prompt(12, 4, 8), {W(0, 3), W(1, 0), W(2, 0)});
  EXPECT_EQ(tie.reason, "approx_hit");
  EXPECT_EQ(tie.index, 1);
}

// Uneven load overrides the cache: past both thresholds the least-loaded
// worker takes the request even when another remembers all of it.
TEST(PolicyTest, ApproxPrefixBalancesUnevenLoad) {
  auto p = MakeApproxPrefixPolicy({.balance_abs_threshold = 4, .balance_rel_threshold = 2});
  const std::vector<BlockHash> prompt = Prompt(8, 0, 2);
  ChooseApprox(*p, prompt, {W(0, 0), W(1, 0)});
  EXPECT_EQ(ChooseApprox(*p, prompt, {W(0, 4), W(1, 0)}).reason, "approx_hit");  // 4 - 0 <= 4
  const Decision d = ChooseApprox(*p, prompt, {W(0, 5), W(1, 0)});
  EXPECT_EQ(d.reason, "load_imbalance");
  EXPECT_EQ(d.index, 1);
  // 10 against 5 is over the absolute threshold but not over twice as many:
  // a hit, on worker 1, which now remembers the prompt too and is less loaded.
  const Decision hit = ChooseApprox(*p, prompt, {W(0, 10), W(1, 5)});
  EXPECT_EQ(hit.reason, "approx_hit");
  EXPECT_EQ(hit.index, 1);
}

// Past its bound a worker's least recently routed blocks are forgotten, and
// a prompt's later blocks before its earlier ones.
TEST(PolicyTest, ApproxPrefixForgetsTheLeastRecentlyRouted) {
  auto p = MakeApproxPrefixPolicy({.match_threshold = 0.01, .max_tokens_per_worker = 16 * 10});
  const std::vector<WorkerView> one = {W(0, 0)};
  const std::vector<WorkerView> two = {W(0, 0), W(1, 0)};
  // With worker 1 remembering nothing, a hit names worker 0 and a miss 1.
  auto remembered_on_0 = [&](std::span<const BlockHash> h) {
    return ChooseApprox(*p, {h.begin(), h.end()}, two).index == 0;
  };
  const std::vector<BlockHash> a = Prompt(6, 0, 2);
  const std::vector<BlockHash> b = Prompt(6, 0, 3);
  ChooseApprox(*p, a, one);
  ChooseApprox(*p, b, one);  // 12 blocks > 10: A's last 2 go
  EXPECT_FALSE(remembered_on_0({a.begin() + 4, a.begin() + 5}));
  EXPECT_TRUE(remembered_on_0({a.begin(), a.begin() + 4}));  // and A is recent again
  ChooseApprox(*p, Prompt(5, 0, 4), one);                    // 15 > 10: B's last 5 go, not A's 4
  EXPECT_TRUE(remembered_on_0({a.begin(), a.begin() + 4}));
  EXPECT_TRUE(remembered_on_0({b.begin(), b.begin() + 1}));
  EXPECT_FALSE(remembered_on_0({b.begin() + 1, b.begin() + 2}));
}

// A worker that stops being a candidate is forgotten after 65536 decisions:
// its old prompts no longer count as hits when it returns.
TEST(PolicyTest, ApproxPrefixForgetsDepartedWorkers) {
  auto p = MakeApproxPrefixPolicy({});
  const std::vector<BlockHash> prompt = Prompt(8, 0, 2);
  ChooseApprox(*p, prompt, {W(0, 0)});
  EXPECT_EQ(ChooseApprox(*p, prompt, {W(0, 0), W(1, 0)}).reason, "approx_hit");
  const std::vector<BlockHash> none;
  const std::vector<WorkerView> others = {W(1, 0)};
  for (int i = 0; i < (1 << 16) + 4096; ++i) p->Choose({1, others, none, 16});
  EXPECT_EQ(ChooseApprox(*p, prompt, {W(0, 0), W(1, 0)}).reason, "approx_miss");
}

// Different cache salts hash the same tokens apart: nothing routed under one
// salt counts for another.
TEST(PolicyTest, ApproxPrefixKeepsSaltsApart) {
  auto p = MakeApproxPrefixPolicy({});
  std::vector<int32_t> tokens(16 * 8);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
  const auto a = HashFullBlocks(RootHash("model", "tenant-a"), tokens, 16);
  const auto b = HashFullBlocks(RootHash("model", "tenant-b"), tokens, 16);
  const std::vector<WorkerView> ws = {W(0, 0), W(1, 0)};
  EXPECT_EQ(ChooseApprox(*p, a, ws).index, 0);
  const Decision d = ChooseApprox(*p, b, ws);
  EXPECT_EQ(d.reason, "approx_miss");
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(ChooseApprox(*p, a, ws).reason, "approx_hit");
}

}  // namespace
}  // namespace kvmesh::router
