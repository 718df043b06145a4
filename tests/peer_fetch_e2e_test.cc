// Peer prefix fetch between worker processes (Worker.FetchKvPages).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/block_hash.h"
#include "common/grpc_security.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "tests/support/worker_process.h"
#include "worker/service/peer_pages.h"

namespace kvmesh {
namespace {

using namespace testing;  // kvmesh::testing: the worker-process helpers
using ::testing::HasSubstr;

// Peer prefix fetch between two worker processes: B, told that A holds the
// prompt's blocks, fetches them over Worker.FetchKvPages and generates what
// A generates, bit for bit; a fetch that cannot work (no peer there, pages of
// another format) costs nothing but the recompute.
TEST(WorkerProcessTest, PeerFetchTakesAPrefixFromAnotherWorker) {
  Worker a = StartWorker();
  Worker b = StartWorker();
  Worker bf16_worker = StartWorker({"--kv-type", "bf16"});
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 200; ++i) prompt.push_back(260 + (i * 37) % 240);
  v1::GenerateRequest req = Greedy(prompt, 16);
  req.set_cache_salt("tenant");
  req.set_logprobs(true);
  req.set_top_logprobs(3);
  ASSERT_TRUE(Generate(*a.stub, req).status.ok());
  const Generation local = Generate(*a.stub, req);  // from A's own cached pages
  ASSERT_TRUE(local.status.ok()) << local.status.error_message();
  const uint32_t full = (prompt.size() - 1) / 16;
  ASSERT_EQ(local.last.usage().cached_tokens(), full * 16);

  v1::GenerateRequest fetch = req;
  fetch.mutable_peer_fetch()->set_address(a.grpc);
  fetch.mutable_peer_fetch()->set_worker_id("a");
  fetch.mutable_peer_fetch()->set_first_block(0);
  fetch.mutable_peer_fetch()->set_end_block(full + 3);  // past the prompt: trimmed
  const Generation fetched = Generate(*b.stub, fetch);
  ASSERT_TRUE(fetched.status.ok()) << fetched.status.error_message();
  EXPECT_EQ(fetched.last.usage().cached_tokens(), full * 16);
  EXPECT_EQ(fetched.tokens, local.tokens);
  // The logits are the same bits: compare the streams' logprobs.
  auto logprobs = [](v1::Worker::Stub& stub, const v1::GenerateRequest& r) {
    grpc::ClientContext ctx;
    auto reader = stub.Generate(&ctx, r);
    v1::GenerateResponse resp;
    std::vector<std::string> out;
    while (reader->Read(&resp)) {
      for (const auto& lp : resp.logprobs()) out.push_back(lp.SerializeAsString());
    }
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  };
  Worker c = StartWorker();
  EXPECT_EQ(logprobs(*c.stub, fetch), logprobs(*a.stub, req));

  v1::LoadRequest load_req;
  v1::LoadResponse load;
  grpc::ClientContext load_ctx;
  ASSERT_TRUE(b.stub->Load(&load_ctx, load_req, &load).ok());
  EXPECT_GT(load.peer_fetch_tokens_per_s(), 0);
  const std::string mb = Metrics(b.http);
  EXPECT_EQ(MetricValue(mb, "kvmesh_worker_peer_fetches_total{result=\"ok\"}"), 1);
  EXPECT_EQ(MetricValue(mb, "kvmesh_worker_peer_fetch_tokens_total"), full * 16);
  EXPECT_GT(MetricValue(mb, "kvmesh_worker_peer_page_bytes_total{direction=\"in\"}"), 0);
  EXPECT_EQ(MetricValue(Metrics(a.http), "kvmesh_worker_peer_pages_served_total"), 2 * full);

  // Info names each worker's page format: A's and B's match, the bf16
  // worker's does not. Asked through the workers' own transport, A sends the
  // prompt's pages and its prefill speed, which an asker that has not
  // prefilled yet (a decode worker) prices what the fetch saved at.
  auto info_of = [](v1::Worker::Stub& stub) {
    grpc::ClientContext ctx;
    v1::InfoResponse info;
    EXPECT_TRUE(stub.Info(&ctx, v1::InfoRequest(), &info).ok());
    return info;
  };
  const v1::InfoResponse info_a = info_of(*a.stub);
  EXPECT_FALSE(info_a.kv_page_format().empty());
  EXPECT_EQ(info_of(*b.stub).kv_page_format(), info_a.kv_page_format());
  EXPECT_NE(info_of(*bf16_worker.stub).kv_page_format(), info_a.kv_page_format());
  {
    GrpcKvPageTransport transport(std::make_shared<ChannelSecurity>());
    const std::vector<BlockHash> hashes = HashFullBlocks(RootHash(info_a.model_digest(), "tenant"),
                                                         std::span(prompt).first(full * 16), 16);
    const FetchedPages got =
        transport.Fetch(a.grpc, hashes, info_a.kv_page_format(),
                        std::chrono::system_clock::now() + std::chrono::seconds(10));
    EXPECT_TRUE(got.status.ok()) << got.status.ToString();
    EXPECT_EQ(got.pages.size(), full);
    EXPECT_GT(got.holder_prefill_tokens_per_s, 0);
  }

  // Another tenant's request names A too, but A holds nothing under its salt.
  v1::GenerateRequest other = fetch;
  other.set_cache_salt("other");
  const Generation foreign = Generate(*b.stub, other);
  ASSERT_TRUE(foreign.status.ok());
  EXPECT_EQ(foreign.last.usage().cached_tokens(), 0);
  EXPECT_EQ(foreign.tokens, local.tokens);
  EXPECT_EQ(MetricValue(Metrics(b.http), "kvmesh_worker_peer_fetches_total{result=\"partial\"}"),
            1);

  // A worker storing bf16 pages cannot use A's f16 ones: it computes them.
  const Generation other_format = Generate(*bf16_worker.stub, fetch);
  ASSERT_TRUE(other_format.status.ok()) << other_format.status.error_message();
  EXPECT_EQ(other_format.last.usage().cached_tokens(), 0);
  // Nobody listens at the hinted address: computed too.
  v1::GenerateRequest nowhere = fetch;
  nowhere.mutable_peer_fetch()->set_address("127.0.0.1:1");
  const Generation gone = Generate(*bf16_worker.stub, nowhere);
  ASSERT_TRUE(gone.status.ok()) << gone.status.error_message();
  EXPECT_EQ(
      MetricValue(Metrics(bf16_worker.http), "kvmesh_worker_peer_fetches_total{result=\"failed\"}"),
      2);
  // Both of its fetches got nothing: its fetch speed is the slowest there
  // is, so a router stops sending it fetch hints (0 would read as unknown).
  v1::LoadResponse failing;
  grpc::ClientContext failing_ctx;
  ASSERT_TRUE(bf16_worker.stub->Load(&failing_ctx, load_req, &failing).ok());
  EXPECT_EQ(failing.peer_fetch_tokens_per_s(), 1.0);  // kNothingFetchedTokensPerS
  // B: one fetch that brought pages, one that brought none (the other salt):
  // the median is still a real speed (of two samples, the higher: fetching
  // is priced out only once over half of them got nothing).
  v1::LoadResponse mixed;
  grpc::ClientContext mixed_ctx;
  ASSERT_TRUE(b.stub->Load(&mixed_ctx, load_req, &mixed).ok());
  EXPECT_GT(mixed.peer_fetch_tokens_per_s(), 1.0);

  // An ill-formed hint is the client's error.
  v1::GenerateRequest bad = fetch;
  bad.mutable_peer_fetch()->set_end_block(0);
  const Generation refused = Generate(*b.stub, bad);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.status.error_message(), HasSubstr("peer_fetch.end_block"));
}

}  // namespace
}  // namespace kvmesh
