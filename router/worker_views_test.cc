#include "router/worker_views.h"

#include <gtest/gtest.h>

#include "router/fake_worker_client.h"

namespace kvmesh::router {
namespace {

// A model with `n` healthy fake workers in slots 0..n-1.
struct Fleet {
  explicit Fleet(int n) {
    std::vector<Candidate> healthy;
    for (int w = 0; w < n; ++w) {
      auto client = std::make_shared<FakeWorkerClient>("10.0.0." + std::to_string(w) + ":1");
      v1::LoadResponse load;
      load.set_running(static_cast<uint32_t>(w % 5));
      client->set_load(load);
      healthy.push_back({w, client});
      all.Add(w);
    }
    snap = ModelSnapshot(&group, std::move(healthy));
  }
  ModelGroup group;
  ModelSnapshot snap;
  WorkerSet all;
};

TEST(SampleCandidatesTest, KeepsHoldersAndTheSessionAndDrawsFromTheRest) {
  Fleet fleet(1000);
  PrefixMatch match;
  match.blocks[17] = 3;
  match.blocks[999] = 1;
  WorkerSet candidates = fleet.all;
  candidates.Remove(500);  // tried already
  for (int round = 0; round < 50; ++round) {
    const WorkerSet chosen = SampleCandidates(fleet.snap, candidates, match, 64, 321);
    EXPECT_TRUE(chosen.Contains(17));
    EXPECT_TRUE(chosen.Contains(999));
    EXPECT_TRUE(chosen.Contains(321));
    EXPECT_FALSE(chosen.Contains(500));
    EXPECT_LE(chosen.size(), 3 + 64);
    EXPECT_GE(chosen.size(), 3 + 40);  // 64 draws from 1,000 rarely collide much
    EXPECT_EQ(chosen - candidates, WorkerSet());
  }
}

TEST(SampleCandidatesTest, DrawsDifferentWorkersEachTime) {
  Fleet fleet(1000);
  const PrefixMatch none;
  WorkerSet seen;
  for (int round = 0; round < 100; ++round) {
    seen = seen | SampleCandidates(fleet.snap, fleet.all, none, 64, -1);
  }
  EXPECT_GT(seen.size(), 900);  // 6,400 draws leave about 2 of 1,000 unseen
}

// Two candidates of 1,000 healthy workers, holding nothing: 64 draws miss
// both about 88% of the time, and then every candidate is weighed rather
// than none (the policy must be handed at least one worker).
TEST(SampleCandidatesTest, NeverLeavesTheDecisionWithoutACandidate) {
  Fleet fleet(1000);
  const PrefixMatch none;
  WorkerSet two;
  two.Add(10);
  two.Add(20);
  for (int round = 0; round < 50; ++round) {
    const WorkerSet chosen = SampleCandidates(fleet.snap, two, none, 64, -1);
    EXPECT_FALSE(chosen.empty());
    EXPECT_EQ(chosen - two, WorkerSet());
  }
}

TEST(BuildWorkerViewsTest, ReadsLoadAndIdOfTheWeighedCandidatesOnly) {
  Fleet fleet(200);
  v1::InfoResponse info;
  info.set_worker_id("gpu-node-7");
  static_cast<FakeWorkerClient*>(fleet.snap.healthy()[7].worker.get())->set_info(info);
  PrefixMatch match;
  match.blocks[7] = 4;
  WorkerSet weighed;
  weighed.Add(7);
  weighed.Add(8);
  std::vector<WorkerView> views;
  std::vector<const Candidate*> conns;
  BuildWorkerViews(fleet.snap, weighed, match, 100, false, std::nullopt, &views, &conns);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].id, "gpu-node-7");
  EXPECT_EQ(views[0].cached_tokens, 4 * fleet.group.block_size);
  EXPECT_EQ(views[0].running, 2);
  EXPECT_EQ(views[1].id, "10.0.0.8:1");  // no Info yet: its address
  EXPECT_EQ(views[1].running, 3);
  EXPECT_EQ(conns[1]->slot, 8);
}

// A lease counts its request in flight, and its prompt tokens to compute
// until the first token; a load report resets what finished since the last.
TEST(BuildWorkerViewsTest, CountsThisRoutersRequestsUntilTheirFirstToken) {
  Fleet fleet(2);
  const auto& worker = fleet.snap.healthy()[1].worker;
  auto view = [&] {
    std::vector<WorkerView> views;
    std::vector<const Candidate*> conns;
    BuildWorkerViews(fleet.snap, fleet.all, PrefixMatch(), 100, false, std::nullopt, &views,
                     &conns);
    return views[1];
  };
  {
    WorkerLease a(worker, 5000), b(worker, 700);
    EXPECT_EQ(view().inflight, 2);
    EXPECT_EQ(view().prefill_inflight_tokens, 5700);
    a.PrefillDone();
    a.PrefillDone();  // once only
    EXPECT_EQ(view().prefill_inflight_tokens, 700);
    EXPECT_EQ(view().running, 1);  // the report's, no request finished yet
  }
  EXPECT_EQ(view().inflight, 0);
  EXPECT_EQ(view().prefill_inflight_tokens, 0);
  EXPECT_EQ(view().running, 0);  // the report still counts the two that finished
  static_cast<FakeWorkerClient*>(worker.get())->set_load(v1::LoadResponse());
  EXPECT_EQ(worker->finished_since_poll.load(), 0);
}

// The session's worker keeps the session unless it carries more than
// ratio × (least load + 1) + slack requests, is not among the views, or
// holds less than it must (SessionHoldTokens; it evicted the session's
// context).
TEST(StickToSessionTest, KeepsTheSessionWithinTheLoadGuard) {
  std::vector<WorkerView> views(3);
  views[0].id = "a";
  views[0].running = 1;
  views[1].id = "b";
  views[1].running = 8;
  views[1].cached_tokens = 96;
  views[2].id = "c";
  views[2].inflight = 9;  // this router's count beats a lagging report
  views[2].cached_tokens = 96;
  Decision d;
  SessionAffinity::Hint hint{"b", 100, 1};
  ASSERT_TRUE(StickToSession(hint, views, 60, 2.0, 4, &d));  // 8 <= 2 × 2 + 4
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.reason, "session");
  hint.worker_id = "c";  // 9 > 8: overloaded, the policy decides
  EXPECT_FALSE(StickToSession(hint, views, 60, 2.0, 4, &d));
  hint.worker_id = "gone";
  EXPECT_FALSE(StickToSession(hint, views, 60, 2.0, 4, &d));
  EXPECT_FALSE(StickToSession(std::nullopt, views, 60, 2.0, 4, &d));
  hint.worker_id = "b";
  views[1].cached_tokens = 48;  // under the 60 it must hold: its context is gone
  EXPECT_FALSE(StickToSession(hint, views, 60, 2.0, 4, &d));
}

// Half of the smaller of the new prompt and the session's last one, within
// what a worker can hold of the prompt; nothing when no cached token counts.
TEST(StickToSessionTest, HoldsHalfOfWhatTheSessionLeftThere) {
  SessionAffinity::Hint hint{"b", 4000, 1};
  EXPECT_EQ(SessionHoldTokens(hint, 5000, 4992, false), 2000);
  // A turn bringing more than the context so far: the old context decides.
  EXPECT_EQ(SessionHoldTokens(hint, 20000, 19984, false), 2000);
  // A prompt of one block holds none of it: nothing required.
  EXPECT_EQ(SessionHoldTokens(hint, 16, 0, false), 0);
  EXPECT_EQ(SessionHoldTokens(hint, 5000, 4992, true), 0);
}

}  // namespace
}  // namespace kvmesh::router
