// A real cluster on loopback: kvmesh-router in front of two kvmesh-workers on
// stories260K, driven over gRPC, HTTP and the C++ SDK.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "sdk/client.h"
#include "tests/support/cluster.h"

namespace kvmesh {
namespace {

using testing::Generate;
using ::testing::HasSubstr;
using testing::HttpGet;
using testing::Metric;
using testing::ProcessHandle;
using testing::RandomTokens;
using testing::Result;
using testing::StartRouter;
using testing::StartWorker;
using testing::WaitForHealthyWorkers;

const std::string kWorkerBin = KVMESH_WORKER_BINARY;
const std::string kRouterBin = KVMESH_ROUTER_BINARY;

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    w0_ = new ProcessHandle(StartWorker(kWorkerBin, {"--worker-id", "w0"}, 0, "cluster_w0"));
    w1_ = new ProcessHandle(StartWorker(kWorkerBin, {"--worker-id", "w1"}, 0, "cluster_w1"));
    router_ =
        new ProcessHandle(StartRouter(kRouterBin, {w0_->grpc, w1_->grpc}, {}, "cluster_router"));
    ASSERT_TRUE(w0_->ok() && w1_->ok() && router_->ok()) << "cluster did not start";
    ASSERT_TRUE(WaitForHealthyWorkers(router_->grpc, 2, std::chrono::seconds(30)));
    stub_ = v1::Inference::NewStub(
                grpc::CreateChannel(router_->grpc, grpc::InsecureChannelCredentials()))
                .release();
  }
  static void TearDownTestSuite() {
    delete stub_;
    delete router_;
    delete w0_;
    delete w1_;
  }
  static ProcessHandle* w0_;
  static ProcessHandle* w1_;
  static ProcessHandle* router_;
  static v1::Inference::Stub* stub_;
};
ProcessHandle* ClusterTest::w0_ = nullptr;
ProcessHandle* ClusterTest::w1_ = nullptr;
ProcessHandle* ClusterTest::router_ = nullptr;
v1::Inference::Stub* ClusterTest::stub_ = nullptr;

TEST_F(ClusterTest, FollowUpsLandOnThePrefixHolderAndSessionsSpread) {
  std::mt19937 rng(42);
  constexpr int kSessions = 6, kTurns = 4;
  std::map<int, std::string> home;
  std::set<std::string> homes;
  for (int s = 0; s < kSessions; ++s) {
    std::vector<int32_t> history = {1};
    const auto prefix = RandomTokens(rng, 200);
    history.insert(history.end(), prefix.begin(), prefix.end());
    for (int turn = 0; turn < kTurns; ++turn) {
      const auto question = RandomTokens(rng, 12);
      history.insert(history.end(), question.begin(), question.end());
      Result r = Generate(*stub_, history, 16);
      ASSERT_TRUE(r.status.ok()) << r.status.error_message();
      if (turn == 0) {
        home[s] = r.worker;
        homes.insert(r.worker);
        EXPECT_EQ(r.last.usage().cached_tokens(), 0u) << "session " << s;
      } else {
        EXPECT_EQ(r.worker, home[s]) << "session " << s << " turn " << turn;
        EXPECT_GE(r.last.usage().cached_tokens(), 192u) << "session " << s << " turn " << turn;
      }
      history.insert(history.end(), r.tokens.begin(), r.tokens.end());
    }
  }
  EXPECT_EQ(homes.size(), 2u) << "sessions all went to one worker";
  const std::string m = HttpGet(router_->http, "/metrics");
  EXPECT_GT(Metric(m, "kvmesh_router_decisions_total{policy=\"prefix\",reason=\"prefix_hit\"}"), 0);
  EXPECT_THAT(m, HasSubstr("kvmesh_router_cached_tokens_prediction_error_tokens_bucket"));
}

TEST_F(ClusterTest, ASecondRouterSeesTheSameIndex) {
  // Sessions started through the first router; their follow-ups through a
  // second router (subscribed to the same workers' events) find the same
  // workers.
  ProcessHandle second = StartRouter(kRouterBin, {w0_->grpc, w1_->grpc}, {}, "cluster_router2");
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(second.grpc, 2, std::chrono::seconds(30)));
  auto stub2 =
      v1::Inference::NewStub(grpc::CreateChannel(second.grpc, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(99);
  for (int s = 0; s < 4; ++s) {
    std::vector<int32_t> history = {1};
    const auto prefix = RandomTokens(rng, 160);
    history.insert(history.end(), prefix.begin(), prefix.end());
    const std::string metrics_before = HttpGet(second.http, "/metrics");
    Result first = Generate(*stub_, history, 8);
    ASSERT_TRUE(first.status.ok());
    history.insert(history.end(), first.tokens.begin(), first.tokens.end());
    const auto more = RandomTokens(rng, 10);
    history.insert(history.end(), more.begin(), more.end());
    // The second router learns of the blocks only from the worker's events
    // (it routed nothing of this session): wait until its index has them.
    const std::string series = "kvmesh_router_index_blocks{worker=\"" + first.worker + "\"}";
    const double before = std::max(0.0, Metric(metrics_before, series));
    // (Up to 10 s: on a loaded machine the events can take a while.)
    for (int i = 0; i < 500 && Metric(HttpGet(second.http, "/metrics"), series) < before + 10;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Result follow = Generate(*stub2, history, 8);
    ASSERT_TRUE(follow.status.ok());
    EXPECT_EQ(follow.worker, first.worker) << "session " << s;
    EXPECT_GE(follow.last.usage().cached_tokens(), 160u);
  }
}

TEST_F(ClusterTest, SdkClientGeneratesChatsAndLists) {
  ClientOptions options;
  options.address = router_->grpc;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  std::string streamed;
  GenerateParams p;
  p.max_tokens = 20;
  p.temperature = 0;
  auto done = (*client)->Generate("Once upon a time", p, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->text, streamed);
  EXPECT_THAT(done->text, ::testing::StartsWith(", there was a little girl named Lily."));
  EXPECT_EQ(done->completion_tokens, 20u);
  EXPECT_FALSE(done->worker.empty());
  auto chat = (*client)->Chat({{"user", "Tell me about a cat."}}, p);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_GT(chat->completion_tokens, 0u);
  // Constrained through the gRPC API: the answer is the grammar's.
  GenerateParams constrained = p;
  constrained.grammar = R"(root ::= "The cat is " ("big" | "small") ".")";
  auto cat = (*client)->Chat({{"user", "Tell me about a cat."}}, constrained);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  EXPECT_THAT(cat->text, ::testing::AnyOf("The cat is big.", "The cat is small."));
  EXPECT_EQ(cat->finish_reason, "stop");
  constrained.grammar.clear();
  constrained.json_schema = R"({"type": "integer", "minimum": 1, "maximum": 3})";
  auto number = (*client)->Generate("Count:", constrained);
  ASSERT_TRUE(number.ok()) << number.status().ToString();
  EXPECT_THAT(number->text, ::testing::AnyOf("1", "2", "3"));
  constrained.json_schema = R"({"type": "object", "not": {}})";
  auto refused = (*client)->Generate("Count:", constrained);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "JSON schema at #: keyword \"not\" is not supported");
  auto models = (*client)->ListModels();
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].workers, 2u);
  auto ids = (*client)->Tokenize("", "Hello world");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 346, 306, 414, 263, 304, 341}));
  // Cancelling from the callback ends the stream.
  int pieces = 0;
  GenerateParams long_run;
  long_run.max_tokens = 200;
  auto cancelled =
      (*client)->Generate("Lily", long_run, [&](std::string_view) { return ++pieces < 3; });
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->finish_reason, "cancelled");
}

TEST_F(ClusterTest, SdkAndGrpcCarryLogprobsAndChoices) {
  ClientOptions options;
  options.address = router_->grpc;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  GenerateParams p;
  p.max_tokens = 8;
  p.temperature = 0;
  p.logprobs = true;
  p.top_logprobs = 3;
  p.prompt_logprobs = true;
  auto done = (*client)->Generate("Once upon a time", p);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->logprobs.size(), done->tokens.size());
  for (size_t i = 0; i < done->tokens.size(); ++i) {
    const TokenLogprob& lp = done->logprobs[i];
    EXPECT_EQ(lp.token, done->tokens[i]);
    ASSERT_TRUE(lp.logprob.has_value());
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].token, lp.token) << "greedy picks the likeliest";
    EXPECT_FALSE(lp.text.empty());
  }
  ASSERT_EQ(done->prompt_logprobs.size(), done->prompt_tokens);
  EXPECT_FALSE(done->prompt_logprobs[0].logprob.has_value()) << "nothing predicts the first";
  EXPECT_TRUE(done->prompt_logprobs[1].logprob.has_value());
  // max_tokens 0 scores the prompt and generates nothing.
  p.max_tokens = 0;
  auto scored = (*client)->Generate("Once upon a time", p);
  ASSERT_TRUE(scored.ok()) << scored.status().ToString();
  EXPECT_TRUE(scored->tokens.empty());
  ASSERT_EQ(scored->prompt_logprobs.size(), done->prompt_logprobs.size());
  EXPECT_NEAR(*scored->prompt_logprobs[2].logprob, *done->prompt_logprobs[2].logprob, 1e-5);

  // n = 3 over gRPC: every choice streams and finishes once.
  grpc::ClientContext ctx;
  v1::GenerateTextRequest req;
  req.set_prompt("Lily and Ben");
  req.mutable_options()->set_max_tokens(10);
  req.mutable_options()->set_n(3);
  req.mutable_options()->mutable_sampling()->set_seed(3);
  auto reader = stub_->Generate(&ctx, req);
  std::map<uint32_t, int> finished, tokens;
  v1::GenerateTextResponse m;
  while (reader->Read(&m)) {
    tokens[m.choice()] += m.tokens_size();
    if (m.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) ++finished[m.choice()];
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(finished, (std::map<uint32_t, int>{{0, 1}, {1, 1}, {2, 1}}));
  for (const auto& [choice, count] : tokens) EXPECT_GT(count, 0) << "choice " << choice;
}

// Requests naming one session go to one worker even with prompts the prefix
// index cannot connect, until that worker's load trips the guard.
TEST_F(ClusterTest, SessionIdKeepsASessionTogetherWithinTheLoadGuard) {
  std::mt19937 rng(7);
  auto run_concurrently = [&](int count, const std::string& session, int max_tokens) {
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < count; ++i) {
      std::vector<int32_t> prompt = {1};
      const auto body = RandomTokens(rng, 40);
      prompt.insert(prompt.end(), body.begin(), body.end());
      prompts.push_back(prompt);
    }
    std::vector<std::string> workers(count);
    std::vector<std::thread> threads;
    for (int i = 0; i < count; ++i) {
      threads.emplace_back([&, i] {
        grpc::ClientContext ctx;
        v1::GenerateTextRequest req;
        req.mutable_prompt_tokens()->Assign(prompts[i].begin(), prompts[i].end());
        req.mutable_options()->set_max_tokens(max_tokens);
        req.mutable_options()->set_session_id(session);
        req.mutable_options()->set_cache_salt(session);  // no cache hits between sessions
        req.mutable_options()->mutable_sampling()->set_temperature(0);
        req.mutable_options()->set_ignore_eos(true);
        auto reader = stub_->Generate(&ctx, req);
        v1::GenerateTextResponse m;
        while (reader->Read(&m)) {
          if (!m.worker().empty()) workers[i] = m.worker();
        }
        EXPECT_TRUE(reader->Finish().ok());
      });
    }
    for (std::thread& t : threads) t.join();
    return workers;
  };
  // Four at once: under the guard (2 × (0 + 1) + 4 requests), one worker.
  const std::vector<std::string> together = run_concurrently(4, "session-together", 16);
  EXPECT_EQ(std::set<std::string>(together.begin(), together.end()).size(), 1u)
      << together[0] << " " << together[1] << " " << together[2] << " " << together[3];
  // Sixteen long ones at once: the guard moves the overflow to the other.
  const std::vector<std::string> crowd = run_concurrently(16, "session-crowd", 120);
  EXPECT_EQ(std::set<std::string>(crowd.begin(), crowd.end()).size(), 2u);
}

TEST_F(ClusterTest, HttpGatewayServesOpenAiAndAnthropicThroughTheRouter) {
  httplib::Client c("http://" + router_->http);
  auto res =
      c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":12,"temperature":0})",
             "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(res->has_header("x-kvmesh-worker"));
  auto j = nlohmann::json::parse(res->body);
  EXPECT_THAT(j["choices"][0]["text"].get<std::string>(), ::testing::StartsWith(", there was"));
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));
  auto msg =
      c.Post("/v1/messages",
             R"({"model":"llama","max_tokens":8,"messages":[{"role":"user","content":"Hi"}]})",
             "application/json");
  ASSERT_TRUE(msg);
  EXPECT_EQ(msg->status, 200) << msg->body;
  const auto msg_json = nlohmann::json::parse(msg->body);
  EXPECT_EQ(msg_json["type"], "message");
  // count_tokens counts what that message's prompt was.
  auto count = c.Post("/v1/messages/count_tokens",
                      R"({"model":"llama","messages":[{"role":"user","content":"Hi"}]})",
                      "application/json");
  ASSERT_TRUE(count);
  EXPECT_EQ(count->status, 200) << count->body;
  EXPECT_EQ(nlohmann::json::parse(count->body)["input_tokens"].get<int>(),
            msg_json["usage"]["input_tokens"].get<int>() +
                msg_json["usage"]["cache_read_input_tokens"].get<int>());
  auto bad_json = c.Post("/v1/chat/completions", "{not json", "application/json");
  ASSERT_TRUE(bad_json);
  EXPECT_EQ(bad_json->status, 400);
  // logit_bias reaches the sampler: +100 forces token 346 (" Hello" in the
  // tokenizer check above) at every step; an id past the vocabulary is a 400.
  auto forced =
      c.Post("/v1/completions",
             R"({"prompt":"Once","max_tokens":3,"temperature":0,"logit_bias":{"346":100}})",
             "application/json");
  ASSERT_TRUE(forced);
  ASSERT_EQ(forced->status, 200) << forced->body;
  const std::string piece = nlohmann::json::parse(forced->body)["choices"][0]["text"];
  EXPECT_EQ(piece.size() % 3, 0u) << piece;
  EXPECT_EQ(piece, piece.substr(0, piece.size() / 3) + piece.substr(0, piece.size() / 3) +
                       piece.substr(0, piece.size() / 3));
  auto outside =
      c.Post("/v1/completions", R"({"prompt":"Once","logit_bias":{"9999":1}})", "application/json");
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->status, 400) << outside->body;
  EXPECT_THAT(outside->body, HasSubstr("logit_bias names token 9999, outside the vocabulary"));
  // One model served: any name gets it (clients ask for claude-…, gpt-…).
  auto other_name = c.Post(
      "/v1/chat/completions",
      R"({"model":"no-such-model","max_tokens":4,"messages":[{"role":"user","content":"x"}]})",
      "application/json");
  ASSERT_TRUE(other_name);
  EXPECT_EQ(other_name->status, 200) << other_name->body;
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"], "llama");
}

// Workers that split stories260K over two CPU devices, one by layer and one
// by tensor, serve the golden greedy story through the router, and say in
// Info and /metrics what each device holds.
TEST(ClusterProcessTest, SplitWorkersServeThroughTheRouter) {
  ProcessHandle layer = StartWorker(
      kWorkerBin,
      {"--worker-id", "layer", "--devices", "cpu:0,cpu:1", "--split", "layer", "--threads", "1"}, 0,
      "split_layer");
  ProcessHandle tensor = StartWorker(
      kWorkerBin,
      {"--worker-id", "tensor", "--devices", "cpu:0,cpu:1", "--split", "tensor", "--threads", "1"},
      0, "split_tensor");
  ASSERT_TRUE(layer.ok() && tensor.ok());
  ProcessHandle router = StartRouter(kRouterBin, {layer.grpc, tensor.grpc},
                                     {"--policy", "round_robin"}, "split_router");
  ASSERT_TRUE(router.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(router.grpc, 2, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(router.grpc, grpc::InsecureChannelCredentials()));
  // "Once upon a time": BOS + 4 tokens of stories260K's vocabulary.
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::map<std::string, std::string> text_by_worker;
  for (int i = 0; i < 4; ++i) {
    Result r = Generate(*stub, prompt, 16, "salt" + std::to_string(i));
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_THAT(r.text, ::testing::StartsWith(", there was a little girl named Lily")) << r.worker;
    text_by_worker[r.worker] = r.text;
  }
  ASSERT_EQ(text_by_worker.size(), 2u) << "round robin should reach both workers";
  EXPECT_EQ(text_by_worker["layer"], text_by_worker["tensor"]);

  for (const ProcessHandle* w : {&layer, &tensor}) {
    auto worker =
        v1::Worker::NewStub(grpc::CreateChannel(w->grpc, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::InfoResponse info;
    ASSERT_TRUE(worker->Info(&ctx, v1::InfoRequest(), &info).ok());
    const bool by_layer = w == &layer;
    EXPECT_EQ(info.split(), by_layer ? "layer" : "tensor");
    ASSERT_EQ(info.devices_size(), 2);
    EXPECT_EQ(info.devices(1).name(), "cpu:1");
    EXPECT_EQ(info.devices(1).threads(), 1u);
    EXPECT_GT(info.devices(0).weight_bytes(), 0u);
    EXPECT_GT(info.devices(1).kv_bytes(), 0u);
    if (by_layer) {
      EXPECT_EQ(info.devices(0).layer_end(), info.devices(1).layer_begin());
      EXPECT_EQ(info.devices(1).layer_end(), 5u);
    } else {
      EXPECT_EQ(info.devices(0).kv_head_end(), 2u);
      EXPECT_EQ(info.devices(1).kv_head_begin(), 2u);
      EXPECT_EQ(info.devices(1).vocab_end(), 512u);
    }
    const std::string metrics = HttpGet(w->http, "/metrics");
    EXPECT_THAT(metrics, HasSubstr("kvmesh_worker_device_weight_bytes{device=\"cpu:1\""));
    EXPECT_THAT(metrics, HasSubstr("kvmesh_worker_device_kv_heads{device=\"cpu:0\",split=\"" +
                                   info.split() + "\"} " + (by_layer ? "4" : "2")));
  }
}

// --strict-model-names restores 404s for names that are not served;
// --model-alias maps patterns and /v1/models lists them.
TEST(ClusterProcessTest, ModelNamesStrictAndAliased) {
  ProcessHandle w = StartWorker(kWorkerBin, {});
  ProcessHandle strict =
      StartRouter(kRouterBin, {w.grpc}, {"--strict-model-names"}, "strict_router");
  ProcessHandle alias =
      StartRouter(kRouterBin, {w.grpc}, {"--strict-model-names", "--model-alias", "claude-*=llama"},
                  "alias_router");
  ASSERT_TRUE(w.ok() && strict.ok() && alias.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(strict.grpc, 1, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitForHealthyWorkers(alias.grpc, 1, std::chrono::seconds(30)));
  const std::string claude =
      R"({"model":"claude-sonnet-4-5","max_tokens":4,"messages":[{"role":"user","content":"Hi"}]})";
  httplib::Client sc("http://" + strict.http);
  auto refused = sc.Post("/v1/messages", claude, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 404) << refused->body;
  EXPECT_THAT(refused->body, HasSubstr("claude-sonnet-4-5"));
  httplib::Client ac("http://" + alias.http);
  auto mapped = ac.Post("/v1/messages", claude, "application/json");
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->status, 200) << mapped->body;
  auto models = nlohmann::json::parse(ac.Get("/v1/models")->body);
  ASSERT_EQ(models["data"].size(), 2u) << models.dump();
  EXPECT_EQ(models["data"][1]["id"], "claude-*");
  EXPECT_EQ(models["data"][1]["alias_of"], "llama");
}

TEST(ClusterProcessTest, KillNineUnderLoadLosesNoUnstartedRequest) {
  ProcessHandle w0 = StartWorker(kWorkerBin, {"--worker-id", "a"}, 0, "kill_w0");
  ProcessHandle w1 = StartWorker(kWorkerBin, {"--worker-id", "b"}, 0, "kill_w1");
  ProcessHandle r =
      StartRouter(kRouterBin, {w0.grpc, w1.grpc}, {"--policy", "round_robin"}, "kill_router");
  ASSERT_TRUE(w0.ok() && w1.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 2, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  // Fill both caches so the index holds entries for both workers.
  std::mt19937 rng(7);
  for (int i = 0; i < 4; ++i) {
    auto p = RandomTokens(rng, 64);
    p.insert(p.begin(), 1);
    ASSERT_TRUE(Generate(*stub, p, 4).status.ok());
  }
  auto indexed = [&](const std::string& worker) {
    return Metric(HttpGet(r.http, "/metrics"),
                  "kvmesh_router_index_blocks{worker=\"" + worker + "\"}");
  };
  for (int i = 0; i < 100 && (indexed("a") <= 0 || indexed("b") <= 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(indexed("b"), 0);

  std::atomic<bool> stop{false};
  std::mutex mu;
  int succeeded = 0, failed_after_tokens = 0, failed_before_tokens = 0;
  std::vector<std::thread> load;
  for (int t = 0; t < 6; ++t) {
    load.emplace_back([&, t] {
      std::mt19937 local(100 + t);
      while (!stop) {
        auto p = RandomTokens(local, 24);
        p.insert(p.begin(), 1);
        Result res = Generate(*stub, p, 48);
        std::lock_guard<std::mutex> lock(mu);
        if (res.status.ok()) {
          ++succeeded;
        } else if (!res.tokens.empty()) {
          ++failed_after_tokens;
          EXPECT_THAT(res.status.error_message(), HasSubstr("failed after"));
        } else {
          ++failed_before_tokens;
          ADD_FAILURE() << "request lost before any token: " << res.status.error_message();
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_TRUE(w1.process->Signal(SIGKILL));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : load) t.join();
  std::printf("[ kill -9 ] succeeded %d, failed mid-stream %d, lost before first token %d\n",
              succeeded, failed_after_tokens, failed_before_tokens);
  EXPECT_EQ(failed_before_tokens, 0);
  EXPECT_GT(succeeded, 10);
  // The router keeps serving, and the dead worker's entries are gone.
  auto p = RandomTokens(rng, 20);
  p.insert(p.begin(), 1);
  EXPECT_TRUE(Generate(*stub, p, 4).status.ok());
  EXPECT_LE(indexed("b"), 0);
  EXPECT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(10)));

  // Restarted on the same port: resubscribed, and entries come back.
  ProcessHandle again = StartWorker(kWorkerBin, {"--worker-id", "b"}, w1.grpc_port, "kill_w1b");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 2, std::chrono::seconds(30)));
  for (int i = 0; i < 6; ++i) {
    auto q = RandomTokens(rng, 40);
    q.insert(q.begin(), 1);
    ASSERT_TRUE(Generate(*stub, q, 2).status.ok());
  }
  double back = 0;
  for (int i = 0; i < 100 && back <= 0; ++i) {
    back = indexed("b");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(back, 0);
}

TEST(ClusterProcessTest, WorkersJoinBySelfRegistrationAndDns) {
  ProcessHandle r = StartRouter(kRouterBin, {}, {}, "selfreg_router");
  ASSERT_TRUE(r.ok());
  ProcessHandle w = StartWorker(kWorkerBin, {"--router", r.grpc}, 0, "selfreg_worker");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30)));
  // DNS: "localhost:PORT" resolves to this machine's loopback address(es).
  ProcessHandle w2 = StartWorker(kWorkerBin, {"--worker-id", "dns"}, 0, "dns_worker");
  ProcessHandle r2 = StartRouter(
      kRouterBin, {},
      {"--workers-dns", "localhost:" + std::to_string(w2.grpc_port), "--dns-refresh-seconds", "1"},
      "dns_router");
  ASSERT_TRUE(w2.ok() && r2.ok());
  EXPECT_TRUE(WaitForHealthyWorkers(r2.grpc, 1, std::chrono::seconds(30)));
}

}  // namespace
}  // namespace kvmesh

namespace kvmesh::testing {
namespace {

// Anthropic cache_control: a breakpoint keeps its prefix cached while other
// requests churn through a small KV cache that, by plain LRU, would evict it.
TEST(ClusterProcessTest, CacheControlBreakpointsOutlastChurn) {
  ProcessHandle w =
      StartWorker(kWorkerBin, {"--kv-memory", "400KiB", "--context-length", "512"}, 0, "retain_w");
  ProcessHandle r = StartRouter(kRouterBin, {w.grpc}, {}, "retain_router");
  ASSERT_TRUE(w.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30)));
  httplib::Client c("http://" + r.http);
  auto system_text = [](int n) {
    std::string text = "Story " + std::to_string(n) + ":";
    for (int i = 0; i < 60; ++i) text += " the cat sat";
    return text;
  };
  auto ask = [&](int n, bool breakpoint) {
    nlohmann::json block = {{"type", "text"}, {"text", system_text(n)}};
    if (breakpoint) block["cache_control"] = {{"type", "ephemeral"}};
    nlohmann::json body = {{"max_tokens", 1},
                           {"system", nlohmann::json::array({block})},
                           {"messages", {{{"role", "user"}, {"content", "Go"}}}}};
    auto res = c.Post("/v1/messages", body.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
    return res ? nlohmann::json::parse(res->body)["usage"] : nlohmann::json();
  };
  for (bool breakpoint : {false, true}) {
    const int id = breakpoint ? 100 : 200;
    const auto first = ask(id, breakpoint);
    if (breakpoint) {
      EXPECT_GT(first["cache_creation_input_tokens"].get<int>(), 150) << first;
    }
    for (int churn = 1; churn <= 6; ++churn) ask(id + churn, false);
    const auto again = ask(id, breakpoint);
    if (breakpoint) {
      EXPECT_GT(again["cache_read_input_tokens"].get<int>(), 150) << again;
    } else {
      EXPECT_LT(again["cache_read_input_tokens"].get<int>(), 50) << again;  // evicted: LRU
    }
  }
}

}  // namespace
}  // namespace kvmesh::testing
