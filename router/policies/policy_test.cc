#include "router/policies/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace kvmesh::router {
namespace {

WorkerView W(int slot, int running, int cached = 0, double rate = 1000) {
  WorkerView v;
  v.slot = slot;
  v.id = "w" + std::to_string(slot);
  v.running = running;
  v.cached_tokens = cached;
  v.prefill_tokens_per_s = rate;
  return v;
}

TEST(PolicyTest, RegistryByName) {
  EXPECT_EQ((*MakePolicy("prefix"))->name(), "prefix");
  EXPECT_EQ((*MakePolicy("least_load"))->name(), "least_load");
  EXPECT_EQ((*MakePolicy("round_robin"))->name(), "round_robin");
  auto bad = MakePolicy("random");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              ::testing::HasSubstr("choose prefix, least_load or round_robin"));
}

TEST(PolicyTest, RoundRobinCycles) {
  auto p = MakeRoundRobinPolicy();
  std::vector<WorkerView> ws = {W(0, 5), W(1, 0), W(2, 9)};
  std::vector<int> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(p->Choose({10, ws}).index);
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(PolicyTest, LeastLoadPicksFewestRequests) {
  auto p = MakeLeastLoadPolicy();
  std::vector<WorkerView> ws = {W(0, 5), W(1, 2), W(2, 2)};
  ws[2].queued_prefill_tokens = -1;  // tie broken by queued prefill
  EXPECT_EQ(p->Choose({10, ws}).index, 2);
  ws[1].inflight = 0;
  ws[0].running = 0;
  EXPECT_EQ(p->Choose({10, ws}).index, 0);
}

TEST(PolicyTest, PrefixPrefersTheCacheHolder) {
  auto p = MakePrefixPolicy({});
  // 1000-token prompt; w1 holds 960 of it and runs one more request.
  std::vector<WorkerView> ws = {W(0, 0), W(1, 1, 960)};
  Decision d = p->Choose({1000, ws});
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.reason, "prefix_hit");
  // Without a hit, the idle worker.
  ws[1].cached_tokens = 0;
  d = p->Choose({1000, ws});
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
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p->Choose({500, ws}).index, 1);
  // Fully equal: taken in turn.
  ws[0].blocks_cached = ws[1].blocks_cached = 0;
  std::set<int> picked;
  for (int i = 0; i < 4; ++i) picked.insert(p->Choose({500, ws}).index);
  EXPECT_EQ(picked.size(), 2u);
}

TEST(PolicyTest, AnUnmeasuredWorkerIsAssumedAsFastAsTheFastest) {
  auto p = MakePrefixPolicy({});
  // w0 measured 10000 tokens/s; w1 has not measured yet. Without a cache hit
  // anywhere they tie, so the new prefix goes to the worker with fewer cached
  // blocks rather than to the only one with a measurement.
  std::vector<WorkerView> ws = {W(0, 0, 0, 10000), W(1, 0, 0, 0)};
  ws[0].blocks_cached = 30;
  EXPECT_EQ(p->Choose({400, ws}).index, 1);
}

TEST(PolicyTest, PrefixWeighsPrefillSpeed) {
  auto p = MakePrefixPolicy({});
  // Same cache, w0 four times faster at prefill: w0 wins despite one request more.
  std::vector<WorkerView> ws = {W(0, 1, 0, 4000), W(1, 0, 0, 1000)};
  EXPECT_EQ(p->Choose({2000, ws}).index, 0);
}

TEST(PolicyTest, AHostTierHitCostsItsRestoreNotARecompute) {
  // 8000-token prompt. w0 holds 6000 tokens, all in its host tier, restored
  // at 40000 tokens/s (0.15 s); w1 holds 4000 on its device; prefill 1000/s.
  auto p = MakePrefixPolicy({});
  WorkerView host = W(0, 0, 6000);
  host.host_cached_tokens = 6000;
  host.host_restore_tokens_per_s = 40000;
  std::vector<WorkerView> ws = {host, W(1, 0, 4000)};
  Decision d = p->Choose({8000, ws});
  EXPECT_EQ(d.index, 0);  // 2.15 s against 4 s
  EXPECT_EQ(d.reason, "prefix_hit");
  // A slow restore (2000 tokens/s: 3 s) makes the host hit dearer than w1's
  // device hit plus the recompute (4 s is not within 10% of 5 s).
  ws[0].host_restore_tokens_per_s = 2000;
  EXPECT_EQ(p->Choose({8000, ws}).index, 1);
  // Unmeasured restore speed: the host blocks count as misses.
  ws[0].host_restore_tokens_per_s = 0;
  EXPECT_EQ(p->Choose({8000, ws}).index, 1);
}

TEST(PolicyTest, IgnoringTheHostTierTreatsItsBlocksAsMisses) {
  PrefixPolicyWeights w;
  w.use_host_tier = false;
  auto p = MakePrefixPolicy(w);
  WorkerView host = W(0, 0, 6000);
  host.host_cached_tokens = 6000;
  host.host_restore_tokens_per_s = 40000;
  std::vector<WorkerView> ws = {host, W(1, 0, 4000)};
  Decision d = p->Choose({8000, ws});
  EXPECT_EQ(d.index, 1);
}

TEST(PolicyTest, GuardStopsOneHotPrefixFromMeltingAWorker) {
  PrefixPolicyWeights weights;
  weights.tokens_per_running_request = 1;  // make the cache dominate the cost
  auto p = MakePrefixPolicy(weights);
  // w0 holds the whole prompt but already runs 20 requests; w1 runs 2.
  std::vector<WorkerView> ws = {W(0, 20, 4000), W(1, 2)};
  Decision d = p->Choose({4096, ws});
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.reason, "load_guard");
  // Mildly uneven load: the cache still wins.
  ws[0].running = 9;  // limit = 2 * (2 + 1) + 4 = 10
  d = p->Choose({4096, ws});
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.reason, "prefix_hit");
}

}  // namespace
}  // namespace kvmesh::router
