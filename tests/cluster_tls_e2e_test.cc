// TLS between every process of a cluster, with real processes on loopback:
// mutual TLS and the service token on the workers' gRPC (router to worker,
// worker to worker for KV pages, worker to router for registration), mutual
// TLS on the router's gRPC and HTTPS, and what a caller without the right
// certificate or token gets (nothing).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <random>
#include <sstream>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "kvmesh/v1/router.grpc.pb.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "tests/support/cluster.h"
#include "tests/support/test_pki.h"

namespace kvmesh {
namespace {

using testing::Generate;
using ::testing::HasSubstr;
using testing::Metric;
using testing::PemPair;
using testing::ProcessHandle;
using testing::RandomTokens;
using testing::Result;
using testing::StartRouter;
using testing::StartWorker;
using testing::TestPki;
using testing::WaitForHealthyWorkers;

const std::string kWorkerBin = KVMESH_WORKER_BINARY;
const std::string kRouterBin = KVMESH_ROUTER_BINARY;
const std::string kToken = "cluster-secret-1";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One CA for the cluster; a certificate each for the workers, the router
// and a client.
class ClusterTlsTest : public ::testing::Test {
 protected:
  ClusterTlsTest()
      : pki_(::testing::TempDir() + "kvmesh-cluster-tls-" + std::to_string(::getpid())),
        worker_(pki_.Issue("kvmesh-worker")),
        router_(pki_.Issue("kvmesh-router")),
        client_(pki_.Issue("kvmesh-client")) {
    // A TLS write to a server that refused the handshake would kill the
    // test with SIGPIPE; it is an ordinary failed request here.
    std::signal(SIGPIPE, SIG_IGN);
  }

  std::vector<std::string> WorkerTlsFlags() const {
    return {"--tls-cert", worker_.cert,        "--tls-key",       worker_.key, "--tls-ca",
            pki_.ca(),    "--tls-client-auth", "--service-token", kToken};
  }
  std::vector<std::string> RouterTlsFlags() const {
    return {"--tls-cert",        router_.cert, "--tls-key",        router_.key,
            "--tls-client-ca",   pki_.ca(),    "--worker-tls-ca",  pki_.ca(),
            "--worker-tls-cert", router_.cert, "--worker-tls-key", router_.key,
            "--worker-token",    kToken};
  }
  // TLS credentials trusting the cluster's CA, with the client certificate
  // or without one.
  std::shared_ptr<grpc::ChannelCredentials> Credentials(bool with_certificate) const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Slurp(pki_.ca());
    if (with_certificate) {
      ssl.pem_cert_chain = Slurp(client_.cert);
      ssl.pem_private_key = Slurp(client_.key);
    }
    return grpc::SslCredentials(ssl);
  }

  TestPki pki_;
  PemPair worker_, router_, client_;
};

// What each Worker RPC answers a caller on `channel` that sends `token`.
std::vector<grpc::Status> CallEveryWorkerRpc(const std::shared_ptr<grpc::Channel>& channel,
                                             const std::string& token) {
  auto stub = v1::Worker::NewStub(channel);
  std::vector<grpc::Status> out;
  auto context = [&](grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  };
  {
    grpc::ClientContext ctx;
    context(&ctx);
    v1::InfoResponse resp;
    out.push_back(stub->Info(&ctx, v1::InfoRequest(), &resp));
  }
  {
    grpc::ClientContext ctx;
    context(&ctx);
    v1::LoadResponse resp;
    out.push_back(stub->Load(&ctx, v1::LoadRequest(), &resp));
  }
  {
    grpc::ClientContext ctx;
    context(&ctx);
    v1::GenerateRequest req;
    req.add_prompt_tokens(1);
    req.set_max_tokens(1);
    auto reader = stub->Generate(&ctx, req);
    v1::GenerateResponse m;
    while (reader->Read(&m)) {
    }
    out.push_back(reader->Finish());
  }
  {
    grpc::ClientContext ctx;
    context(&ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    auto reader = stub->SubscribeKvEvents(&ctx, v1::SubscribeKvEventsRequest());
    v1::KvEventBatch m;
    // A stream that opened sends its snapshot at once; a refused one ends.
    const bool got_events = reader->Read(&m);
    if (got_events) ctx.TryCancel();
    grpc::Status s = reader->Finish();
    out.push_back(got_events ? grpc::Status::OK : s);
  }
  {
    grpc::ClientContext ctx;
    context(&ctx);
    v1::FetchKvPagesRequest req;
    req.add_block_hashes(std::string(16, 'x'));
    auto reader = stub->FetchKvPages(&ctx, req);
    v1::KvPageBatch m;
    while (reader->Read(&m)) {
    }
    out.push_back(reader->Finish());
  }
  return out;
}

TEST_F(ClusterTlsTest, EveryHopIsMutualTlsWithTheServiceToken) {
  std::vector<std::string> prefill_flags = WorkerTlsFlags();
  prefill_flags.insert(prefill_flags.end(), {"--worker-id", "p", "--role", "prefill"});
  std::vector<std::string> decode_flags = WorkerTlsFlags();
  decode_flags.insert(decode_flags.end(), {"--worker-id", "d", "--role", "decode"});
  ProcessHandle prefill = StartWorker(kWorkerBin, prefill_flags, 0, "tls_p");
  ProcessHandle decode = StartWorker(kWorkerBin, decode_flags, 0, "tls_d");
  std::vector<std::string> router_flags = RouterTlsFlags();
  router_flags.insert(router_flags.end(), {"--disagg-min-prompt-tokens", "64"});
  ProcessHandle r = StartRouter(kRouterBin, {prefill.grpc, decode.grpc}, router_flags, "tls_r");
  ASSERT_TRUE(prefill.ok() && decode.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 2, std::chrono::seconds(30), "", Credentials(true)));

  // Client → router → prefill worker → (KV pages) → decode worker, all TLS.
  auto stub = v1::Inference::NewStub(grpc::CreateChannel(r.grpc, Credentials(true)));
  std::mt19937 rng(5);
  std::vector<int32_t> prompt = {1};
  for (int32_t t : RandomTokens(rng, 300)) prompt.push_back(t);
  const int32_t full = (static_cast<int32_t>(prompt.size()) - 1) / 16 * 16;
  const Result split = Generate(*stub, prompt, 16);
  ASSERT_TRUE(split.status.ok()) << split.status.error_message();
  EXPECT_EQ(split.worker, "d");
  EXPECT_EQ(split.last.usage().cached_tokens(), full);  // fetched from p over mTLS
  EXPECT_EQ(split.tokens.size(), 16u);

  // The workers' /metrics over HTTPS (no client certificate asked there).
  httplib::SSLClient metrics("127.0.0.1",
                             std::stoi(decode.http.substr(decode.http.rfind(':') + 1)));
  metrics.set_ca_cert_path(pki_.ca().c_str());
  metrics.enable_server_certificate_verification(true);
  auto page = metrics.Get("/metrics");
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  EXPECT_EQ(Metric(page->body, "kvmesh_worker_peer_fetches_total{result=\"ok\"}"), 1);

  // The router's HTTPS gateway asks for a client certificate too.
  const int http_port = std::stoi(r.http.substr(r.http.rfind(':') + 1));
  httplib::SSLClient with_cert("127.0.0.1", http_port, client_.cert, client_.key);
  with_cert.set_ca_cert_path(pki_.ca().c_str());
  with_cert.enable_server_certificate_verification(true);
  auto ok = with_cert.Post("/v1/completions", R"({"prompt":"Once upon","max_tokens":2})",
                           "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200) << ok->body;
  httplib::SSLClient no_cert("127.0.0.1", http_port);
  no_cert.set_ca_cert_path(pki_.ca().c_str());
  no_cert.enable_server_certificate_verification(true);
  EXPECT_FALSE(no_cert.Get("/healthz"));
  httplib::Client plain("127.0.0.1", http_port);
  auto plain_answer = plain.Get("/healthz");
  EXPECT_TRUE(!plain_answer || plain_answer->status >= 400);

  // The router's gRPC: no client certificate, no answer.
  auto anonymous = v1::Inference::NewStub(grpc::CreateChannel(r.grpc, Credentials(false)));
  EXPECT_EQ(Generate(*anonymous, {1, 403}, 2).status.error_code(), grpc::StatusCode::UNAVAILABLE);

  // A worker gives nothing to a caller without its certificate or its token.
  for (const grpc::Status& s : CallEveryWorkerRpc(
           grpc::CreateChannel(decode.grpc, grpc::InsecureChannelCredentials()), kToken)) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  for (const grpc::Status& s :
       CallEveryWorkerRpc(grpc::CreateChannel(decode.grpc, Credentials(false)), kToken)) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  for (const std::string& token : {std::string(), std::string("cluster-secret-2")}) {
    for (const grpc::Status& s :
         CallEveryWorkerRpc(grpc::CreateChannel(decode.grpc, Credentials(true)), token)) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
      EXPECT_EQ(s.error_message(),
                "the Worker service needs the metadata \"authorization: Bearer "
                "<service_token>\"");
    }
  }
  // With both, Info, Load, Generate and the event stream answer; the fetch
  // of an unknown page format is refused on its merits.
  const std::vector<grpc::Status> admitted =
      CallEveryWorkerRpc(grpc::CreateChannel(decode.grpc, Credentials(true)), kToken);
  ASSERT_EQ(admitted.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(admitted[i].ok()) << i << admitted[i].error_message();
  EXPECT_EQ(admitted[4].error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ClusterTlsTest, WorkersRegisterOverTlsWithTheToken) {
  std::vector<std::string> flags = RouterTlsFlags();
  ProcessHandle r = StartRouter(kRouterBin, {}, flags, "tls_register_r");
  ASSERT_TRUE(r.ok());
  std::vector<std::string> worker_flags = WorkerTlsFlags();
  worker_flags.insert(worker_flags.end(), {"--router", r.grpc});
  ProcessHandle w = StartWorker(kWorkerBin, worker_flags, 0, "tls_register_w");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30), "", Credentials(true)));
  auto stub = v1::Inference::NewStub(grpc::CreateChannel(r.grpc, Credentials(true)));
  const Result got = Generate(*stub, {1, 403, 407}, 4);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.tokens.size(), 4u);

  // Registering a worker needs the token: a stranger with a valid client
  // certificate cannot add a worker of its own, nor remove this one.
  auto registry = v1::RouterRegistry::NewStub(grpc::CreateChannel(r.grpc, Credentials(true)));
  grpc::ClientContext ctx;
  v1::RegisterWorkerRequest req;
  req.set_address("127.0.0.1:1");
  v1::RegisterWorkerResponse resp;
  const grpc::Status refused = registry->Register(&ctx, req, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(refused.error_message(), HasSubstr("<worker_token>"));
  grpc::ClientContext ctx2;
  v1::DeregisterWorkerRequest dereg;
  dereg.set_address(w.grpc);
  v1::DeregisterWorkerResponse dresp;
  EXPECT_EQ(registry->Deregister(&ctx2, dereg, &dresp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(5), "", Credentials(true)));
}

// Bad TLS files are refused at start, naming the option and the file.
TEST_F(ClusterTlsTest, BadTlsFilesStopAWorkerAtStart) {
  const PemPair other = pki_.Issue("other");
  testing::Subprocess worker;
  const std::string log = ::testing::TempDir() + "tls_bad_worker.log";
  ASSERT_TRUE(worker.Start({kWorkerBin, "--grpc-port", "0", "--http-port", "0", "--tls-cert",
                            worker_.cert, "--tls-key", other.key},
                           log));
  EXPECT_NE(worker.Wait(std::chrono::seconds(30)), 0);
  EXPECT_THAT(Slurp(log), HasSubstr("option tls_key: the key in " + other.key +
                                    " does not match the certificate in " + worker_.cert));

  testing::Subprocess router;
  const std::string router_log = ::testing::TempDir() + "tls_bad_router.log";
  ASSERT_TRUE(router.Start(
      {kRouterBin, "--grpc-port", "0", "--http-port", "0", "--worker-tls-ca", worker_.key},
      router_log));
  EXPECT_NE(router.Wait(std::chrono::seconds(30)), 0);
  EXPECT_THAT(Slurp(router_log),
              HasSubstr("option worker_tls_ca: " + worker_.key + " holds no PEM certificate"));
}

}  // namespace
}  // namespace kvmesh
