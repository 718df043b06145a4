// Who may reach a cluster and how much: API keys, overload, per-key rate
// limits, and workers on a Unix domain socket, with real processes.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <random>
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

}  // namespace
}  // namespace kvmesh
