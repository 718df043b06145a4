// KV pages between real worker processes behind a router: peer prefix
// fetch and disaggregated prefill and decode, on stories260K.
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

// With peer fetch on and load priced high, a prompt whose holder is busy
// goes to the idle worker, which fetches the holder's pages instead of
// computing them: the router's hint reaches the worker, the output is the
// holder's, and both workers count the pages.
TEST(ClusterProcessTest, RouterSendsAPeerFetchToTheIdleWorker) {
  ProcessHandle w0 = StartWorker(kWorkerBin, {"--worker-id", "w0"});
  ProcessHandle w1 = StartWorker(kWorkerBin, {"--worker-id", "w1"});
  ProcessHandle r = StartRouter(kRouterBin, {w0.grpc, w1.grpc},
                                {"--prefix-peer-fetch", "--prefix-tokens-per-running-request",
                                 "1000000", "--prefix-fetch-overhead-ms", "0"});
  ASSERT_TRUE(w0.ok() && w1.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 2, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(7);
  // A few tries: the busy request must still be running when the second
  // arrives, which a stalled machine could defeat once.
  bool fetched = false;
  for (int attempt = 0; attempt < 4 && !fetched; ++attempt) {
    std::vector<int32_t> prompt = {1};
    for (int32_t t : RandomTokens(rng, 100)) prompt.push_back(t);
    const Result first = Generate(*stub, prompt, 1);
    ASSERT_TRUE(first.status.ok()) << first.status.error_message();
    // The holder becomes busy with a long generation of the same prompt...
    Result busy;
    std::thread long_one([&] {
      grpc::ClientContext ctx;
      v1::GenerateTextRequest req;
      req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
      req.mutable_options()->set_max_tokens(400);
      req.mutable_options()->set_ignore_eos(true);
      req.mutable_options()->mutable_sampling()->set_temperature(0);
      auto reader = stub->Generate(&ctx, req);
      v1::GenerateTextResponse m;
      while (reader->Read(&m)) {
        if (!m.worker().empty()) busy.worker = m.worker();
      }
      busy.status = reader->Finish();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // ...so the same prompt goes to the other worker, which fetches it.
    const Result second = Generate(*stub, prompt, 8);
    long_one.join();
    ASSERT_TRUE(second.status.ok()) << second.status.error_message();
    ASSERT_TRUE(busy.status.ok()) << busy.status.error_message();
    const int32_t full = (static_cast<int32_t>(prompt.size()) - 1) / 16 * 16;
    if (second.worker == busy.worker || second.worker == first.worker) continue;
    EXPECT_EQ(second.last.usage().cached_tokens(), full);
    EXPECT_EQ(second.tokens, Generate(*stub, prompt, 8).tokens);
    fetched = true;
  }
  ASSERT_TRUE(fetched) << "the second request never went to the idle worker";
  const double ok0 =
      Metric(HttpGet(w0.http, "/metrics"), "kvmesh_worker_peer_fetches_total{result=\"ok\"}");
  const double ok1 =
      Metric(HttpGet(w1.http, "/metrics"), "kvmesh_worker_peer_fetches_total{result=\"ok\"}");
  EXPECT_GE(std::max(ok0, 0.0) + std::max(ok1, 0.0), 1);
  const std::string routing = HttpGet(r.http, "/metrics");
  EXPECT_THAT(routing, HasSubstr("reason=\"peer_fetch\""));
}

// A prefill worker and a decode worker: a long prompt is computed on the
// prefill worker, the decode worker fetches its pages and streams the
// output, which is the colocated output; short prompts skip the prefill
// worker; with the prefill worker killed, requests are served colocated.
TEST(ClusterProcessTest, DisaggregatedPrefillHandsThePagesToTheDecodeWorker) {
  ProcessHandle prefill =
      StartWorker(kWorkerBin, {"--worker-id", "p", "--role", "prefill"}, 0, "disagg_p");
  ProcessHandle decode =
      StartWorker(kWorkerBin, {"--worker-id", "d", "--role", "decode"}, 0, "disagg_d");
  ProcessHandle alone = StartWorker(kWorkerBin, {"--worker-id", "alone"});
  ProcessHandle r = StartRouter(kRouterBin, {prefill.grpc, decode.grpc},
                                {"--disagg-min-prompt-tokens", "64"}, "disagg_router");
  ProcessHandle r_alone = StartRouter(kRouterBin, {alone.grpc});
  ASSERT_TRUE(prefill.ok() && decode.ok() && alone.ok() && r.ok() && r_alone.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 2, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitForHealthyWorkers(r_alone.grpc, 1, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  auto colocated =
      v1::Inference::NewStub(grpc::CreateChannel(r_alone.grpc, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(11);
  std::vector<int32_t> prompt = {1};
  for (int32_t t : RandomTokens(rng, 300)) prompt.push_back(t);
  const int32_t full = (static_cast<int32_t>(prompt.size()) - 1) / 16 * 16;

  const Result split = Generate(*stub, prompt, 24, "t");
  ASSERT_TRUE(split.status.ok()) << split.status.error_message();
  EXPECT_EQ(split.worker, "d");
  EXPECT_EQ(split.last.usage().cached_tokens(), full);  // fetched from p
  const Result together = Generate(*colocated, prompt, 24, "t");
  ASSERT_TRUE(together.status.ok());
  EXPECT_EQ(split.tokens, together.tokens);
  EXPECT_EQ(
      Metric(HttpGet(decode.http, "/metrics"), "kvmesh_worker_peer_fetches_total{result=\"ok\"}"),
      1);
  EXPECT_EQ(Metric(HttpGet(prefill.http, "/metrics"), "kvmesh_worker_peer_pages_served_total"),
            full / 16);

  // A short prompt is computed where it is decoded.
  const std::vector<int32_t> short_prompt(prompt.begin(), prompt.begin() + 40);
  const Result quick = Generate(*stub, short_prompt, 8, "t");
  ASSERT_TRUE(quick.status.ok());
  EXPECT_EQ(quick.worker, "d");
  EXPECT_EQ(
      Metric(HttpGet(prefill.http, "/metrics"), "kvmesh_worker_requests_total{outcome=\"length\"}"),
      1);

  // The prefill worker dies: requests are served colocated, none lost.
  ASSERT_TRUE(prefill.process->Signal(SIGKILL));
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p = {1};
    for (int32_t t : RandomTokens(rng, 300)) p.push_back(t);
    const Result after = Generate(*stub, p, 8, "t");
    ASSERT_TRUE(after.status.ok()) << after.status.error_message();
    EXPECT_EQ(after.worker, "d");
    EXPECT_EQ(after.tokens, Generate(*colocated, p, 8, "t").tokens);
  }
}

}  // namespace
}  // namespace kvmesh
