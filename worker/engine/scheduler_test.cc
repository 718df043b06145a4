#include "worker/engine/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/rate_tracker.h"

namespace kvmesh {
namespace {

// A minimal vocabulary: requests need a tokenizer for their detokenizer.
std::unique_ptr<Tokenizer> TinyTokenizer() {
  TokenizerConfig c;
  c.model = TokenizerModel::kSpm;
  c.tokens = {"<unk>", "<s>", "</s>",
              "\xe2\x96\x81"
              "a"};
  c.scores = {0, 0, 0, -1};
  c.token_types = {kTokenTypeUnknown, kTokenTypeControl, kTokenTypeControl, kTokenTypeNormal};
  c.token_attrs = {kTokenAttrUnknown, kTokenAttrControl, kTokenAttrControl, kTokenAttrNormal};
  c.unk_id = 0;
  c.bos_id = 1;
  c.eos_id = 2;
  c.eog_ids = {2};
  auto t = Tokenizer::Create(c);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

class SchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Request> MakeRequest(const std::string& id, int prompt_len, int first = 3) {
    EngineRequest spec;
    spec.id = id;
    spec.prompt.resize(prompt_len);
    std::iota(spec.prompt.begin(), spec.prompt.end(), first);
    spec.sampling.temperature = 0;
    spec.on_output = [](RequestOutput&&) {};
    auto r = std::make_unique<Request>(std::move(spec), 1000, *tokenizer_);
    r->kv.root = RootHash("m");
    return r;
  }

  // Simulates the engine's commit of a step: computed tokens, full blocks
  // cached, and for sampled chunks one new token.
  void Commit(const ScheduleOutput& out, KvCacheManager& kv) {
    for (const ScheduledChunk& c : out.chunks) {
      c.request->num_computed += c.num_tokens;
      kv.CommitComputed(&c.request->kv, c.request->tokens, c.request->num_computed);
      if (c.sample) c.request->tokens.push_back(500);
    }
  }

  std::unique_ptr<Tokenizer> tokenizer_ = TinyTokenizer();
};

TEST_F(SchedulerTest, ChunkedPrefillThenDecodeWithinTheBudget) {
  KvCacheManager kv(64, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 8, .max_running = 4, .max_waiting = 8});
  auto a = MakeRequest("a", 10);
  auto b = MakeRequest("b", 3, 100);
  s.AddWaiting(a.get());
  s.AddWaiting(b.get());

  ScheduleOutput o1 = s.Schedule();
  ASSERT_EQ(o1.chunks.size(), 1u);  // a takes the whole budget
  EXPECT_EQ(o1.chunks[0].num_tokens, 8);
  EXPECT_FALSE(o1.chunks[0].sample);
  Commit(o1, kv);

  ScheduleOutput o2 = s.Schedule();
  ASSERT_EQ(o2.chunks.size(), 2u);  // a finishes its prompt, b starts
  EXPECT_EQ(o2.chunks[0].request, a.get());
  EXPECT_EQ(o2.chunks[0].num_tokens, 2);
  EXPECT_TRUE(o2.chunks[0].sample);
  EXPECT_EQ(o2.chunks[1].request, b.get());
  EXPECT_EQ(o2.chunks[1].num_tokens, 3);
  EXPECT_TRUE(o2.chunks[1].sample);
  EXPECT_EQ(o2.num_tokens, 5);
  Commit(o2, kv);

  ScheduleOutput o3 = s.Schedule();  // two decodes
  ASSERT_EQ(o3.chunks.size(), 2u);
  EXPECT_EQ(o3.chunks[0].num_tokens, 1);
  EXPECT_EQ(o3.chunks[1].num_tokens, 1);
  EXPECT_EQ(a->kv.table.size(), 3u);  // 11 positions, blocks of 4
}

TEST_F(SchedulerTest, RunningLimitAndFifoAdmission) {
  KvCacheManager kv(64, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 100, .max_running = 2, .max_waiting = 8});
  auto a = MakeRequest("a", 4), b = MakeRequest("b", 4), c = MakeRequest("c", 4);
  s.AddWaiting(a.get());
  s.AddWaiting(b.get());
  s.AddWaiting(c.get());
  ScheduleOutput o = s.Schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  EXPECT_EQ(s.waiting().front(), c.get());
  s.Remove(a.get());
  Commit(o, kv);
  EXPECT_EQ(s.Schedule().chunks.size(), 2u);  // b decodes, c admitted
}

// Under memory pressure a request whose prefix is cached now is admitted
// before older misses (whose allocations would evict it), at most
// kMaxPassOvers times ahead of the same request.
TEST_F(SchedulerTest, ACachedPrefixIsAdmittedBeforeOlderMisses) {
  KvCacheManager kv(64, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 100, .max_running = 1, .max_waiting = 64});
  auto warm = MakeRequest("warm", 13, 100);
  s.AddWaiting(warm.get());
  Commit(s.Schedule(), kv);
  s.Remove(warm.get());  // its 3 full blocks stay cached

  auto miss = MakeRequest("miss", 13, 300);
  auto hit = MakeRequest("hit", 13, 100);  // the same prompt again
  s.AddWaiting(miss.get());
  s.AddWaiting(hit.get());
  ScheduleOutput o = s.Schedule();
  ASSERT_EQ(o.chunks.size(), 1u);
  EXPECT_EQ(o.chunks[0].request, hit.get());
  EXPECT_EQ(hit->num_cached_tokens, 12);
  EXPECT_EQ(s.waiting().front(), miss.get());
  EXPECT_EQ(miss->times_passed_over, 1);
  s.Remove(hit.get());

  // Passed over kMaxPassOvers times, the miss goes first.
  std::vector<std::unique_ptr<Request>> hits;
  miss->times_passed_over = kMaxPassOvers;
  hits.push_back(MakeRequest("hit2", 13, 100));
  s.AddWaiting(hits.back().get());
  o = s.Schedule();
  ASSERT_EQ(o.chunks.size(), 1u);
  EXPECT_EQ(o.chunks[0].request, miss.get());
  s.Remove(miss.get());
  s.Remove(hits.back().get());
}

TEST_F(SchedulerTest, PreemptsTheNewestWhenBlocksRunOut) {
  // 4 blocks of 4 tokens. a (8 tokens) and b (8 tokens) fill them; when a
  // needs a 3rd block, b (newest) is preempted and goes back to waiting.
  KvCacheManager kv(4, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 64, .max_running = 4, .max_waiting = 8});
  auto a = MakeRequest("a", 7), b = MakeRequest("b", 7, 200);
  s.AddWaiting(a.get());
  s.AddWaiting(b.get());
  Commit(s.Schedule(), kv);         // both prefilled; each sampled → 8 tokens
  ScheduleOutput o = s.Schedule();  // both decode position 7: fits in block 2
  ASSERT_EQ(o.chunks.size(), 2u);
  Commit(o, kv);  // 9 tokens each: position 8 needs a third block
  ScheduleOutput p = s.Schedule();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], b.get());
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_TRUE(b->kv.table.empty());
  EXPECT_EQ(s.waiting().front(), b.get());
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].request, a.get());
  EXPECT_EQ(a->kv.table.size(), 3u);
  EXPECT_EQ(s.num_preemptions(), 1);
}

TEST_F(SchedulerTest, ResumedRequestReusesItsCachedBlocks) {
  KvCacheManager kv(4, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 64, .max_running = 4, .max_waiting = 8});
  auto a = MakeRequest("a", 7), b = MakeRequest("b", 7, 200);
  s.AddWaiting(a.get());
  s.AddWaiting(b.get());
  Commit(s.Schedule(), kv);
  Commit(s.Schedule(), kv);
  ScheduleOutput p = s.Schedule();  // b preempted (its 2 blocks freed, 2 cached)
  ASSERT_EQ(p.preempted.size(), 1u);
  Commit(p, kv);
  s.Remove(a.get());  // a finishes: room again
  ScheduleOutput q = s.Schedule();
  ASSERT_EQ(q.chunks.size(), 1u);
  EXPECT_EQ(q.chunks[0].request, b.get());
  // b's blocks were freed tail first, so a's third block evicted b's second
  // block; b's first block (4 tokens) survived and is reused.
  EXPECT_EQ(b->num_computed, 4);
  EXPECT_EQ(q.chunks[0].num_tokens, 5);
  EXPECT_EQ(b->num_cached_tokens, 0);  // reported: the hit at first admission
}

TEST_F(SchedulerTest, RequestThatCannotFitAloneIsReported) {
  KvCacheManager kv(2, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 64, .max_running = 4, .max_waiting = 8});
  auto big = MakeRequest("big", 12);
  s.AddWaiting(big.get());
  ScheduleOutput o = s.Schedule();
  EXPECT_TRUE(o.chunks.empty());
  ASSERT_EQ(o.unfittable.size(), 1u);
  EXPECT_EQ(o.unfittable[0], big.get());
  EXPECT_TRUE(s.waiting().empty());
  EXPECT_EQ(kv.pool().num_free(), 2);
}

TEST_F(SchedulerTest, ScoredPromptsComeInSmallChunksAndSkipTheCache) {
  KvCacheManager kv(256, 4);
  Scheduler s(&kv, {.max_tokens_per_step = 512, .max_running = 4, .max_waiting = 8});
  auto warm = MakeRequest("warm", 300);
  s.AddWaiting(warm.get());
  Commit(s.Schedule(), kv);  // its prompt is now cached
  s.Remove(warm.get());
  auto scored = MakeRequest("scored", 300);
  scored->spec.prompt_logprobs = true;
  s.AddWaiting(scored.get());
  int steps = 0;
  while (scored->num_computed < scored->num_prompt_tokens) {
    ScheduleOutput o = s.Schedule();
    ASSERT_EQ(o.chunks.size(), 1u);
    EXPECT_LE(o.chunks[0].num_tokens, kMaxScoredChunkTokens);
    Commit(o, kv);
    ++steps;
  }
  EXPECT_EQ(scored->num_cached_tokens, 0) << "scoring reuses no cached prefix";
  EXPECT_EQ(steps, 3);  // 128 + 128 + 44
}

TEST(RateTrackerTest, MedianOfTheRecentWindowIgnoresOutliers) {
  RateTracker r(4);
  EXPECT_EQ(r.Median(), 0);
  r.Add(100);
  r.Add(5);  // one slow step
  r.Add(110);
  EXPECT_EQ(r.Median(), 100);
  r.Add(120);
  r.Add(130);                  // replaces 100 (oldest)
  r.Add(140);                  // replaces 5
  EXPECT_EQ(r.Median(), 130);  // window {130, 140, 110, 120}
}

TEST(RateTrackerTest, SamplesOlderThanTheMaxAgeAreForgotten) {
  using std::chrono::seconds;
  RateTracker r(4, seconds(10));
  const RateTracker::Clock::time_point t0{};
  r.Add(100, t0);
  r.Add(200, t0 + seconds(5));
  r.Add(300, t0 + seconds(6));
  EXPECT_EQ(r.Median(t0 + seconds(7)), 200);   // {100, 200, 300}
  EXPECT_EQ(r.Median(t0 + seconds(12)), 300);  // 100 expired: {200, 300}
  EXPECT_EQ(r.Median(t0 + seconds(16)), 300);  // {300}
  EXPECT_EQ(r.Median(t0 + seconds(17)), 0);    // none left: not measured
  r.Add(50, t0 + seconds(30));
  EXPECT_EQ(r.Median(t0 + seconds(30)), 50);  // a new sample counts alone
}

}  // namespace
}  // namespace kvmesh
