// Who may reach a cluster, how much, and what its logs tell: API keys,
// overload, per-key rate limits, workers on a Unix domain socket, and logs
// that hold no prompt or output text unless asked, with real processes.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "kvmesh/v1/inference.grpc.pb.h"
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

TEST(ClusterProcessTest, ApiKeysAndOverload) {
  ProcessHandle w =
      StartWorker(kWorkerBin, {"--max-running-requests", "1", "--max-waiting-requests", "1"});
  ProcessHandle r = StartRouter(kRouterBin, {w.grpc}, {"--api-keys", "k1,k2"});
  ASSERT_TRUE(w.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30), "k1"));
  httplib::Client c("http://" + r.http);
  const std::string body = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":150})";
  auto no_key = c.Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  httplib::Headers wrong = {{"Authorization", "Bearer nope"}};
  EXPECT_EQ(c.Post("/v1/chat/completions", wrong, body, "application/json")->status, 401);
  httplib::Headers anthropic = {{"x-api-key", "k2"}};
  auto ok =
      c.Post("/v1/messages", anthropic,
             R"({"max_tokens":4,"messages":[{"role":"user","content":"Hi"}]})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // One running and one waiting slot: a burst overflows into 429s.
  std::atomic<int> too_many{0}, fine{0};
  std::atomic<bool> retry_after{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      httplib::Client cc("http://" + r.http);
      cc.set_read_timeout(60);
      httplib::Headers key = {{"Authorization", "Bearer k1"}};
      auto res = cc.Post("/v1/chat/completions", key, body, "application/json");
      if (!res) return;
      if (res->status == 429) {
        ++too_many;
        if (res->has_header("Retry-After")) retry_after = true;
      } else if (res->status == 200) {
        ++fine;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(too_many.load(), 0);
  EXPECT_GT(fine.load(), 0);
  EXPECT_TRUE(retry_after.load());
}

// A worker on a Unix domain socket serves through a router that dials it
// there (single-host deployments with no worker port on the network).
TEST(ClusterProcessTest, RouterReachesAWorkerOnAUnixDomainSocket) {
  const std::string path =
      ::testing::TempDir() + "kvmesh-cluster-" + std::to_string(::getpid()) + ".sock";
  ProcessHandle w = StartWorker(kWorkerBin, {"--listen", "unix:" + path});
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w.grpc, "unix:" + path);
  ProcessHandle r = StartRouter(kRouterBin, {w.grpc});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  const Result got = Generate(*stub, {1, 403, 407, 261}, 8);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.tokens.size(), 8u);
}

// Per-key rate limits: a key past its burst gets 429 with Retry-After over
// HTTP and RESOURCE_EXHAUSTED over gRPC (one bucket across both); another
// key is unaffected.
TEST(ClusterProcessTest, EachApiKeyHasItsOwnRateLimit) {
  ProcessHandle w = StartWorker(kWorkerBin);
  ProcessHandle r =
      StartRouter(kRouterBin, {w.grpc},
                  {"--api-keys", "k1,k2", "--api-key-rate", "0.2", "--api-key-burst", "2"});
  ASSERT_TRUE(w.ok() && r.ok());
  httplib::Client c("http://" + r.http);
  // /healthz needs no key (polling with one would spend its tokens).
  for (int i = 0; i < 600; ++i) {
    auto h = c.Get("/healthz");
    if (h && h->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const httplib::Headers k1 = {{"Authorization", "Bearer k1"}};
  const std::string body = R"({"prompt":"Once upon","max_tokens":2})";
  EXPECT_EQ(c.Post("/v1/completions", k1, body, "application/json")->status, 200);
  EXPECT_EQ(c.Post("/v1/completions", k1, body, "application/json")->status, 200);
  auto limited = c.Post("/v1/completions", k1, body, "application/json");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_THAT(limited->body, HasSubstr("rate limit reached (0.2 requests/s per API key"));
  EXPECT_EQ(limited->get_header_value("Retry-After"), "5");
  const httplib::Headers k2 = {{"x-api-key", "k2"}};
  EXPECT_EQ(c.Post("/v1/completions", k2, body, "application/json")->status, 200);

  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer k1");
  v1::ListModelsRequest req;
  v1::ListModelsResponse resp;
  const grpc::Status s = stub->ListModels(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("retry in"));
  // Generate keeps the code too (a client retries; it does not drop its key).
  grpc::ClientContext gen_ctx;
  gen_ctx.AddMetadata("authorization", "Bearer k1");
  v1::GenerateTextRequest gen;
  gen.add_prompt_tokens(1);
  auto reader = stub->Generate(&gen_ctx, gen);
  v1::GenerateTextResponse m;
  while (reader->Read(&m)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string LogFile(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name + ".log";
}

// At debug level, on every path a request takes (OpenAI and Anthropic,
// streamed or not, refused as malformed or too long), neither the router's
// nor the worker's log holds the prompt's text or the model's answer. A
// router started with --log-request-text logs both.
TEST(ClusterProcessTest, LogsHoldNoPromptOrOutputTextUnlessAsked) {
  const std::string marker = "Quokka7319 sails";
  ProcessHandle w = StartWorker(kWorkerBin, {"--log-level", "debug"}, 0, "privacy_worker");
  ProcessHandle r = StartRouter(kRouterBin, {w.grpc}, {"--log-level", "debug"}, "privacy_router");
  ProcessHandle asked = StartRouter(
      kRouterBin, {w.grpc}, {"--log-request-text", "--log-level", "info"}, "privacy_asked_router");
  ASSERT_TRUE(w.ok() && r.ok() && asked.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitForHealthyWorkers(asked.grpc, 1, std::chrono::seconds(30)));
  httplib::Client c("http://" + r.http);
  c.set_read_timeout(60);
  const std::string chat =
      R"({"messages":[{"role":"user","content":")" + marker + R"( to the moon"}],"max_tokens":24)";
  std::vector<std::string> outputs;
  auto plain = c.Post("/v1/chat/completions", chat + "}", "application/json");
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->status, 200) << plain->body;
  outputs.push_back(
      nlohmann::json::parse(plain->body)["choices"][0]["message"]["content"].get<std::string>());
  auto streamed = c.Post("/v1/chat/completions", chat + R"(,"stream":true})", "application/json");
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200);
  auto anthropic =
      c.Post("/v1/messages",
             R"({"max_tokens":24,"zz_probe":1,"messages":[{"role":"user","content":")" + marker +
                 R"("}]})",
             "application/json");
  ASSERT_TRUE(anthropic);
  ASSERT_EQ(anthropic->status, 200) << anthropic->body;
  outputs.push_back(
      nlohmann::json::parse(anthropic->body)["content"][0]["text"].get<std::string>());
  // Refused: a bad schema whose text holds the marker, and a prompt past the
  // model's context.
  auto bad_schema = c.Post(
      "/v1/chat/completions",
      chat + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)" +
          R"({"type":")" + marker + R"("}}}})",
      "application/json");
  ASSERT_TRUE(bad_schema);
  EXPECT_EQ(bad_schema->status, 400) << bad_schema->body;
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += marker + " ";
  auto too_long = c.Post("/v1/chat/completions",
                         R"({"messages":[{"role":"user","content":")" + long_text + R"("}]})",
                         "application/json");
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 400) << too_long->body;

  const std::string router_log = ReadFile(LogFile("privacy_router"));
  const std::string worker_log = ReadFile(LogFile("privacy_worker"));
  // Debug logging was on: the ignored Anthropic field is named.
  EXPECT_THAT(router_log, HasSubstr("zz_probe"));
  for (const std::string* log : {&router_log, &worker_log}) {
    EXPECT_EQ(log->find("Quokka7319"), std::string::npos) << *log;
    for (const std::string& out : outputs) {
      ASSERT_GE(out.size(), 16u) << out;
      EXPECT_EQ(log->find(out.substr(0, 16)), std::string::npos) << out << "\n" << *log;
    }
  }

  // Asked: the prompt (chat template applied) and the answer are logged.
  httplib::Client ac("http://" + asked.http);
  ac.set_read_timeout(60);
  auto logged = ac.Post("/v1/chat/completions", chat + "}", "application/json");
  ASSERT_TRUE(logged);
  ASSERT_EQ(logged->status, 200) << logged->body;
  const std::string answer =
      nlohmann::json::parse(logged->body)["choices"][0]["message"]["content"].get<std::string>();
  const std::string asked_log = ReadFile(LogFile("privacy_asked_router"));
  EXPECT_THAT(asked_log, HasSubstr(marker + " to the moon"));
  std::string quoted;  // the answer's start as the log quotes it
  for (const char ch : answer.substr(0, 12)) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    if (ch == '\n') {
      quoted += "\\n";
    } else {
      quoted += ch;
    }
  }
  EXPECT_THAT(asked_log, HasSubstr(" output: \"" + quoted)) << answer;
}

}  // namespace
}  // namespace kvmesh
