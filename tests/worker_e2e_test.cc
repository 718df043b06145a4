// kvmesh-worker as a real process on loopback, driven over gRPC and HTTP.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/block_hash.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "tests/support/subprocess.h"
#include "tests/support/worker_process.h"

namespace kvmesh {
namespace {

using namespace testing;  // kvmesh::testing: the worker-process helpers
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kShared = KVMESH_SHARED_DIR;

nlohmann::json Golden() {
  std::ifstream in(kShared + "/golden/stories260K/generate_greedy.json");
  EXPECT_TRUE(in.good()) << "../shared/golden is missing";
  return nlohmann::json::parse(in);
}

class WorkerE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { worker_ = new Worker(StartWorker({"--admin-token", "s3cret"})); }
  static void TearDownTestSuite() { delete worker_; }
  static Worker* worker_;
};
Worker* WorkerE2eTest::worker_ = nullptr;

TEST_F(WorkerE2eTest, InfoDescribesModelTokenizerAndCache) {
  grpc::ClientContext ctx;
  v1::InfoResponse info;
  ASSERT_TRUE(worker_->stub->Info(&ctx, v1::InfoRequest(), &info).ok());
  EXPECT_EQ(info.arch(), "llama");
  EXPECT_EQ(info.n_vocab(), 512u);
  EXPECT_EQ(info.block_size(), 16u);
  EXPECT_EQ(info.tokenizer().tokens_size(), 512);
  EXPECT_EQ(info.tokenizer().model(), "llama");
  EXPECT_EQ(info.hash_root(), std::string(RootHash(info.model_digest()).AsBytes()));
  EXPECT_GT(info.kv_capacity_blocks(), 100u);
  EXPECT_NE(info.epoch(), 0u);
}

TEST_F(WorkerE2eTest, GreedyGenerationMatchesTheGolden) {
  const nlohmann::json g = Golden()[0];
  Generation out =
      Generate(*worker_->stub, Greedy(g["prompt_tokens"].get<std::vector<int32_t>>(), 64));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(out.tokens, g["generated_tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(out.text, g["generated_text"].get<std::string>());
  EXPECT_EQ(out.last.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(out.last.usage().prompt_tokens(), 5u);
  EXPECT_EQ(out.last.usage().completion_tokens(), 64u);
  // Text in, tokenized by the worker, with BOS.
  v1::GenerateRequest text_req;
  text_req.set_prompt_text(g["prompt"].get<std::string>());
  text_req.set_add_special(true);
  text_req.mutable_sampling()->set_temperature(0);
  text_req.set_max_tokens(64);
  Generation by_text = Generate(*worker_->stub, text_req);
  EXPECT_EQ(by_text.tokens, out.tokens);
}

TEST_F(WorkerE2eTest, StopStringEndsTheTextAndIsNamed) {
  const nlohmann::json g = Golden()[0];
  const std::string full = g["generated_text"].get<std::string>();
  // A stop string from the middle of the golden text: the text ends before it.
  const std::string stop = full.substr(full.size() / 2, 6);
  v1::GenerateRequest req = Greedy(g["prompt_tokens"].get<std::vector<int32_t>>(), 64);
  req.add_stop("no such text");
  req.add_stop(stop);
  Generation out = Generate(*worker_->stub, req);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(out.text, full.substr(0, full.find(stop)));
  EXPECT_EQ(out.last.finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_EQ(out.last.stop_sequence(), stop);
  // Ended by the length: no stop string named.
  Generation plain =
      Generate(*worker_->stub, Greedy(g["prompt_tokens"].get<std::vector<int32_t>>(), 4));
  EXPECT_EQ(plain.last.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(plain.last.stop_sequence(), "");
}

TEST_F(WorkerE2eTest, ConcurrentStreamsEqualSequentialOnes) {
  const nlohmann::json golden = Golden();
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> p = golden[i % 5]["prompt_tokens"].get<std::vector<int32_t>>();
    p.push_back(300 + i);  // distinct prompts
    prompts.push_back(p);
  }
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) alone.push_back(Generate(*worker_->stub, Greedy(p, 32)).tokens);
  std::vector<std::vector<int32_t>> together(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back(
        [&, i] { together[i] = Generate(*worker_->stub, Greedy(prompts[i], 32)).tokens; });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(together[i], alone[i]) << i;
}

TEST_F(WorkerE2eTest, CancelMidStreamFreesBlocksAndSparesOthers) {
  const auto prompt = Golden()[1]["prompt_tokens"].get<std::vector<int32_t>>();
  const auto reference = Generate(*worker_->stub, Greedy(prompt, 100)).tokens;
  std::vector<int32_t> other_tokens;
  std::thread other([&] { other_tokens = Generate(*worker_->stub, Greedy(prompt, 100)).tokens; });
  grpc::ClientContext ctx;
  Generation cancelled = Generate(*worker_->stub, Greedy({1, 403, 407}, 1500), &ctx, 5);
  other.join();
  EXPECT_EQ(cancelled.status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(other_tokens, reference);
  // Blocks return to the pool (metric) once the engine has seen the cancel.
  double used = -1;
  for (int i = 0; i < 100 && used != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    used = MetricValue(Metrics(worker_->http), "kvmesh_worker_kv_blocks{state=\"used\"}");
  }
  EXPECT_EQ(used, 0);
  EXPECT_GE(
      MetricValue(Metrics(worker_->http), "kvmesh_worker_requests_total{outcome=\"cancelled\"}"),
      1);
}

TEST_F(WorkerE2eTest, MalformedRequestsGetClearErrorsAndTheWorkerKeepsServing) {
  struct Case {
    v1::GenerateRequest req;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({Greedy({}, 8), "prompt is empty"});
  v1::GenerateRequest temp = Greedy({1, 2}, 8);
  temp.mutable_sampling()->set_temperature(-1);
  cases.push_back({temp, "temperature"});
  v1::GenerateRequest top_p = Greedy({1, 2}, 8);
  top_p.mutable_sampling()->set_top_p(7);
  cases.push_back({top_p, "top_p"});
  cases.push_back({Greedy(std::vector<int32_t>(5000, 300), 8), "context"});
  cases.push_back({Greedy({1, 99999}, 8), "outside the vocabulary"});
  cases.push_back({Greedy({1, -3}, 8), "outside the vocabulary"});
  cases.push_back({Greedy({1, 2}, -4), "max_tokens must be >= 0"});
  v1::GenerateRequest unknown = Greedy({1, 2}, 8);
  unknown.GetReflection()->MutableUnknownFields(&unknown)->AddVarint(99, 1);
  cases.push_back({unknown, "unknown field (number 99)"});
  v1::GenerateRequest both = Greedy({1, 2}, 8);
  both.set_prompt_text("hello");
  cases.push_back({both, "not both"});
  for (size_t i = 0; i < cases.size(); ++i) {
    Generation g = Generate(*worker_->stub, cases[i].req);
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << i;
    EXPECT_THAT(g.status.error_message(), HasSubstr(cases[i].expected)) << i;
  }
  Generation fine = Generate(*worker_->stub, Greedy({1, 403}, 4));
  EXPECT_TRUE(fine.status.ok());
  EXPECT_EQ(fine.tokens.size(), 4u);
}

TEST_F(WorkerE2eTest, KvEventsStreamSnapshotThenDeltas) {
  grpc::ClientContext ctx;
  auto reader = worker_->stub->SubscribeKvEvents(&ctx, v1::SubscribeKvEventsRequest());
  v1::KvEventBatch snap;
  ASSERT_TRUE(reader->Read(&snap));
  EXPECT_TRUE(snap.snapshot());
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(260 + i);
  ASSERT_TRUE(Generate(*worker_->stub, Greedy(prompt, 2)).status.ok());
  grpc::ClientContext info_ctx;
  v1::InfoResponse info;
  ASSERT_TRUE(worker_->stub->Info(&info_ctx, v1::InfoRequest(), &info).ok());
  const auto want = HashFullBlocks(RootHash(info.model_digest()), prompt, 16);
  std::set<std::string> stored;
  uint64_t seq = snap.sequence();
  while (stored.size() < want.size()) {
    v1::KvEventBatch b;
    ASSERT_TRUE(reader->Read(&b));
    EXPECT_EQ(b.sequence(), ++seq);  // numbered without gaps
    EXPECT_EQ(b.epoch(), snap.epoch());
    for (const auto& e : b.events()) {
      if (e.has_stored())
        stored.insert(e.stored().block_hashes().begin(), e.stored().block_hashes().end());
    }
  }
  for (const BlockHash& h : want) EXPECT_TRUE(stored.count(std::string(h.AsBytes())));
  ctx.TryCancel();
}

TEST_F(WorkerE2eTest, AdminNeedsTheTokenAndChangesKnobsLive) {
  grpc::ClientContext no_auth;
  v1::RuntimeConfig cfg;
  EXPECT_EQ(worker_->admin->GetRuntimeConfig(&no_auth, {}, &cfg).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  v1::UpdateRuntimeConfigRequest up;
  up.set_max_tokens_per_step(64);
  up.set_log_level("info");
  ASSERT_TRUE(worker_->admin->UpdateRuntimeConfig(&ctx, up, &cfg).ok());
  EXPECT_EQ(cfg.max_tokens_per_step(), 64u);
  EXPECT_EQ(cfg.log_level(), "info");
  grpc::ClientContext bad;
  bad.AddMetadata("authorization", "Bearer s3cret");
  v1::UpdateRuntimeConfigRequest wrong;
  wrong.set_log_level("loud");
  EXPECT_EQ(worker_->admin->UpdateRuntimeConfig(&bad, wrong, &cfg).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext clear;
  clear.AddMetadata("authorization", "Bearer s3cret");
  v1::ClearCacheResponse cleared;
  ASSERT_TRUE(worker_->admin->ClearCache(&clear, {}, &cleared).ok());
  // Still serving with the smaller step budget.
  EXPECT_TRUE(Generate(*worker_->stub, Greedy({1, 403, 407}, 8)).status.ok());
}

// The fault knob of drills (bench/fault_drill.sh): slow engine steps, and a
// gap in the KV event numbering that subscribers must notice.
TEST_F(WorkerE2eTest, InjectedFaultsSlowStepsAndOpenAGapInTheEvents) {
  auto admin_context = [](grpc::ClientContext* ctx) {
    ctx->AddMetadata("authorization", "Bearer s3cret");
  };
  v1::InjectFaultResponse resp;
  {
    grpc::ClientContext no_auth;
    v1::InjectFaultRequest req;
    req.set_step_delay_ms(100);
    EXPECT_EQ(worker_->admin->InjectFault(&no_auth, req, &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    grpc::ClientContext too_slow;
    admin_context(&too_slow);
    req.set_step_delay_ms(70000);
    EXPECT_EQ(worker_->admin->InjectFault(&too_slow, req, &resp).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    grpc::ClientContext ctx;
    admin_context(&ctx);
    req.set_step_delay_ms(100);
    ASSERT_TRUE(worker_->admin->InjectFault(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.step_delay_ms(), 100u);
  }
  // A prefill step and 5 decode steps, each at least 100 ms longer.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Generate(*worker_->stub, Greedy({1, 403, 407}, 6)).status.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(600));
  {
    grpc::ClientContext ctx;
    admin_context(&ctx);
    v1::InjectFaultRequest req;
    req.set_step_delay_ms(0);
    ASSERT_TRUE(worker_->admin->InjectFault(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.step_delay_ms(), 0u);
  }

  grpc::ClientContext sub_ctx;
  auto reader = worker_->stub->SubscribeKvEvents(&sub_ctx, v1::SubscribeKvEventsRequest());
  v1::KvEventBatch snap;
  ASSERT_TRUE(reader->Read(&snap));
  ASSERT_TRUE(snap.snapshot());
  {
    grpc::ClientContext ctx;
    admin_context(&ctx);
    v1::InjectFaultRequest req;
    req.set_drop_kv_event_batches(1);
    ASSERT_TRUE(worker_->admin->InjectFault(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.kv_event_batches_to_drop(), 1u);
  }
  // Each generation stores new blocks: the first one's batch is dropped.
  for (int32_t first : {300, 400}) {
    std::vector<int32_t> prompt = {1};
    for (int i = 0; i < 40; ++i) prompt.push_back(first + i);
    ASSERT_TRUE(Generate(*worker_->stub, Greedy(prompt, 2)).status.ok());
  }
  v1::KvEventBatch next;
  ASSERT_TRUE(reader->Read(&next));
  EXPECT_GT(next.sequence(), snap.sequence() + 1);  // a gap: the router resubscribes
  sub_ctx.TryCancel();
}

TEST_F(WorkerE2eTest, MetricsPassPromtool) {
  ASSERT_TRUE(Generate(*worker_->stub, Greedy({1, 403, 407}, 8)).status.ok());
  const std::string text = Metrics(worker_->http);
  EXPECT_THAT(text, HasSubstr("kvmesh_worker_time_to_first_token_seconds_bucket"));
  EXPECT_THAT(text, HasSubstr("kvmesh_worker_requests_total{outcome=\"length\"}"));
  EXPECT_THAT(text, HasSubstr("kvmesh_worker_kv_blocks{state=\"cached\"}"));
  EXPECT_THAT(text, HasSubstr("kvmesh_worker_kv_reused_blocks"));
  EXPECT_THAT(text, HasSubstr("kvmesh_worker_kv_refill_ratio"));
  // Least recently used (the default) has no head start to report.
  EXPECT_THAT(text, Not(HasSubstr("kvmesh_worker_kv_eviction_head_start_blocks")));
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus); skipping its lint";
  }
  const std::string path = ::testing::TempDir() + "/worker_metrics.txt";
  std::ofstream(path) << text;
  EXPECT_EQ(std::system(("promtool check metrics < " + path).c_str()), 0);
}

TEST(WorkerProcessTest, OverloadIsResourceExhausted) {
  Worker w = StartWorker({"--max-running-requests", "1", "--max-waiting-requests", "1"});
  std::atomic<int> exhausted{0}, ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      Generation g = Generate(*w.stub, Greedy({1, 403, 407}, 200));
      if (g.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        EXPECT_THAT(g.status.error_message(), HasSubstr("overloaded"));
        ++exhausted;
      } else if (g.status.ok()) {
        ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(exhausted.load(), 0);
  EXPECT_GT(ok.load(), 0);
}

TEST(WorkerProcessTest, SigtermLetsRunningRequestsFinishAndExitsZero) {
  Worker w = StartWorker({"--shutdown-grace-seconds", "20"});
  Generation running;
  std::thread t([&] { running = Generate(*w.stub, Greedy({1, 403, 407}, 300)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(w.process->Signal(SIGTERM));
  t.join();
  EXPECT_TRUE(running.status.ok()) << running.status.error_message();
  EXPECT_EQ(running.tokens.size(), 300u);
  EXPECT_EQ(w.process->Wait(std::chrono::seconds(20)), 0);
}

// A long prefill (a 12k-token prompt on tinystories-d64, many 512-token
// steps) stops within a step of its deadline, and SIGTERM during another
// ends the worker within its grace period.
TEST(WorkerProcessTest, CancellationAndShutdownStopALongPrefill) {
  Worker w = StartWorker({"--model", kShared + "/models/tinystories-d64.gguf", "--context-length",
                          "16384", "--allow-context-overflow", "--kv-memory", "64MiB",
                          "--shutdown-grace-seconds", "1"});
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 12000; ++i) prompt.push_back(260 + (i * 31) % 240);
  auto running = [&] {
    v1::LoadRequest req;
    v1::LoadResponse load;
    grpc::ClientContext ctx;
    EXPECT_TRUE(w.stub->Load(&ctx, req, &load).ok());
    return load.running() + load.waiting();
  };
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  const Generation late = Generate(*w.stub, Greedy(prompt, 4), &ctx);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  while (running() > 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double stopped_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ cancel ] a 12k-token prefill stopped %.2f s after it started (deadline 0.5 s)\n",
              stopped_s);
  EXPECT_LT(stopped_s, 3.0);
  EXPECT_EQ(running(), 0u);

  // In full the prefill takes several seconds (it is timed here first).
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<int32_t> other = prompt;
  other[1] = 300;  // nothing cached
  ASSERT_TRUE(Generate(*w.stub, Greedy(other, 1)).status.ok());
  const double full_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
  std::printf("[ cancel ] the same prefill in full: %.2f s\n", full_s);
  std::thread t([&] {
    other[1] = 301;
    (void)Generate(*w.stub, Greedy(other, 4));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(w.process->Signal(SIGTERM));
  EXPECT_EQ(w.process->Wait(std::chrono::seconds(30)), 0);
  const double exited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("[ shutdown ] SIGTERM during a 12k-token prefill: exited after %.2f s (grace 1 s)\n",
              exited_s);
  // The grace, then at most the engine step in flight (a 512-token chunk)
  // and the streams' teardown: far sooner than the prefill would end.
  EXPECT_LT(exited_s, 1.0 + 0.5 * full_s);
  t.join();
}

TEST(WorkerProcessTest, BadConfigIsAnErrorNamingIt) {
  Subprocess p;
  ASSERT_TRUE(
      p.Start({KVMESH_WORKER_BINARY, "--kv-type", "q9_9"}, ::testing::TempDir() + "/w.err"));
  EXPECT_EQ(p.Wait(std::chrono::seconds(10)), 2);
  std::ifstream err(::testing::TempDir() + "/w.err");
  std::string msg((std::istreambuf_iterator<char>(err)), {});
  EXPECT_THAT(msg, HasSubstr("kv_type"));
}

TEST(WorkerProcessTest, BadHostTierSizeIsAnErrorNamingIt) {
  Subprocess p;
  ASSERT_TRUE(p.Start({KVMESH_WORKER_BINARY, "--kv-host-memory", "lots"},
                      ::testing::TempDir() + "/wh.err"));
  EXPECT_EQ(p.Wait(std::chrono::seconds(10)), 2);
  std::ifstream err(::testing::TempDir() + "/wh.err");
  std::string msg((std::istreambuf_iterator<char>(err)), {});
  EXPECT_THAT(msg, HasSubstr("kv_host_memory"));
}

// A context past the model's training context (stories260K: 2048 tokens) is
// refused at start, naming both numbers, unless asked for.
TEST(WorkerProcessTest, ContextPastTheTrainingContextNeedsTheOverflowFlag) {
  const std::string model = kShared + "/models/stories260K.gguf";
  const std::string log = ::testing::TempDir() + "/w_ctx.err";
  Subprocess p;
  ASSERT_TRUE(p.Start({KVMESH_WORKER_BINARY, "--model", model, "--context-length", "8192",
                       "--grpc-port", "0", "--http-port", "0"},
                      log));
  EXPECT_EQ(p.Wait(std::chrono::seconds(20)), 1);
  std::ifstream err(log);
  std::string msg((std::istreambuf_iterator<char>(err)), {});
  EXPECT_THAT(msg, HasSubstr("option context_length = 8192 is past " + model +
                             "'s training context of 2048 tokens"));
  EXPECT_THAT(msg, HasSubstr("allow_context_overflow"));
}

// 1,000 requests through one worker: no leaked blocks, bounded memory.
long RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
  }
  return -1;
}

TEST(WorkerProcessTest, SoakOfAThousandRequests) {
  Worker w = StartWorker();
  auto run_batch = [&](int n, int offset) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = t; i < n; i += 8) {
          std::vector<int32_t> prompt = {1, 403, 407, 261, 300 + (offset + i) % 200};
          if (!Generate(*w.stub, Greedy(prompt, 12)).status.ok()) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    return failures.load();
  };
  EXPECT_EQ(run_batch(200, 0), 0);  // warm-up: allocator pools, gRPC threads
  const long rss_before = RssKb(w.process->pid());
  EXPECT_EQ(run_batch(1000, 200), 0);
  const long rss_after = RssKb(w.process->pid());
  std::printf("[ soak ] 1000 requests: RSS %ld kB -> %ld kB (%+.2f%%)\n", rss_before, rss_after,
              100.0 * (rss_after - rss_before) / rss_before);
  EXPECT_LT(rss_after, rss_before * 1.05);
  // The load gauges are published at the end of each engine step, which may
  // come just after the last stream's final message reached its client.
  std::string m = Metrics(w.http);
  for (int i = 0; i < 100 && MetricValue(m, "kvmesh_worker_running_requests") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    m = Metrics(w.http);
  }
  EXPECT_EQ(MetricValue(m, "kvmesh_worker_kv_blocks{state=\"used\"}"), 0);
  EXPECT_EQ(MetricValue(m, "kvmesh_worker_running_requests"), 0);
  EXPECT_EQ(MetricValue(m, "kvmesh_worker_requests_total{outcome=\"length\"}"), 1200);
}

// --listen unix:PATH: gRPC on a Unix domain socket, no TCP port for it; a
// second worker on the same socket is refused; a stale socket file left by
// a killed worker is no obstacle.
TEST(WorkerProcessTest, ServesOnAUnixDomainSocket) {
  const std::string path =
      ::testing::TempDir() + "kvmesh-worker-" + std::to_string(::getpid()) + ".sock";
  Worker w = StartWorker({"--listen", "unix:" + path});
  ASSERT_EQ(w.grpc, "unix:" + path);
  const Generation g = Generate(*w.stub, Greedy({1, 403, 407}, 8));
  ASSERT_TRUE(g.status.ok()) << g.status.error_message();
  EXPECT_EQ(g.tokens.size(), 8u);

  auto refused = [](const std::vector<std::string>& args) {
    Subprocess p;
    const std::string err = ::testing::TempDir() + "/uds.err";
    std::vector<std::string> argv = {KVMESH_WORKER_BINARY, "--http-port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    EXPECT_TRUE(p.Start(argv, err));
    EXPECT_NE(p.Wait(std::chrono::seconds(30)), 0);
    std::ifstream in(err);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_THAT(refused({"--listen", "unix:" + path}), HasSubstr("is in use"));
  // The first still serves.
  EXPECT_TRUE(Generate(*w.stub, Greedy({1, 403}, 2)).status.ok());

  ASSERT_TRUE(w.process->Signal(SIGKILL));
  w.process->Wait(std::chrono::seconds(10));
  Worker again = StartWorker({"--listen", "unix:" + path});  // over the stale file
  // A channel of its own: gRPC shares subchannels between channels to the
  // same address, and the killed worker's connection would fail the first
  // call with a broken pipe.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto fresh = v1::Worker::NewStub(
      grpc::CreateCustomChannel(again.grpc, grpc::InsecureChannelCredentials(), args));
  const Generation after = Generate(*fresh, Greedy({1, 403}, 2));
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_THAT(refused({"--listen", path}), HasSubstr("is not unix:PATH"));
}

}  // namespace
}  // namespace kvmesh
