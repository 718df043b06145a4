// Process lifecycle of a real cluster on loopback: a router's drain on
// SIGTERM; a gRPC port already in use is an error at start.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "tests/support/cluster.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;
using testing::ProcessHandle;
using testing::StartRouter;
using testing::StartWorker;
using testing::Subprocess;
using testing::WaitForHealthyWorkers;

const std::string kWorkerBin = KVMESH_WORKER_BINARY;
const std::string kRouterBin = KVMESH_ROUTER_BINARY;

std::string HttpGet(const std::string& host_port, const std::string& path) {
  httplib::Client c("http://" + host_port);
  auto res = c.Get(path.c_str());
  return res ? res->body : "";
}

// SIGTERM to a router with streams in flight: /healthz turns 503 at once,
// every stream still ends with its finish reason, then the router exits 0.
TEST(ClusterProcessTest, RouterDrainsStreamsOnSigterm) {
  ProcessHandle w = StartWorker(kWorkerBin, {}, 0, "drain_w");
  ProcessHandle r = StartRouter(kRouterBin, {w.grpc}, {}, "drain_router");
  ASSERT_TRUE(w.ok() && r.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(r.grpc, 1, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(r.grpc, grpc::InsecureChannelCredentials()));
  constexpr int kStreams = 6;
  std::atomic<int> started{0}, finished{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext ctx;
      v1::GenerateTextRequest req;
      req.set_prompt("Once upon a time " + std::to_string(i));
      req.mutable_options()->set_max_tokens(400);
      req.mutable_options()->set_ignore_eos(true);
      auto reader = stub->Generate(&ctx, req);
      v1::GenerateTextResponse m;
      bool first = true;
      v1::FinishReason reason = v1::FINISH_REASON_UNSPECIFIED;
      while (reader->Read(&m)) {
        if (first) ++started;
        first = false;
        if (m.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) reason = m.finish_reason();
      }
      EXPECT_TRUE(reader->Finish().ok());
      if (reason != v1::FINISH_REASON_UNSPECIFIED) ++finished;
    });
  }
  while (started.load() < kStreams) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(r.process->Signal(SIGTERM));
  // Unready while it drains (the streams are still running).
  std::string health;
  for (int i = 0; i < 100 && health.find("draining") == std::string::npos; ++i) {
    health = HttpGet(r.http, "/healthz");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_THAT(health, HasSubstr("draining"));
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(finished.load(), kStreams) << "a stream was cut off by the shutdown";
  EXPECT_EQ(r.process->Wait(std::chrono::seconds(20)), 0);
}

// A second process on a port in use must not start and share it (gRPC's
// default SO_REUSEPORT would let it): it exits non-zero and says why.
TEST(ClusterProcessTest, APortInUseIsAnErrorAtStart) {
  ProcessHandle first = StartWorker(kWorkerBin, {}, 0, "port_w1");
  ASSERT_TRUE(first.ok());
  for (const std::string& binary : {kWorkerBin, kRouterBin}) {
    const std::string log = ::testing::TempDir() + "/port_in_use.err";
    std::vector<std::string> argv = {binary,        "--grpc-port", std::to_string(first.grpc_port),
                                     "--http-port", "0",           "--log-level",
                                     "warning"};
    if (binary == kRouterBin) argv.insert(argv.end(), {"--workers", first.grpc});
    Subprocess second;
    ASSERT_TRUE(second.Start(argv, log));
    const int code = second.Wait(std::chrono::seconds(60));
    EXPECT_NE(code, 0) << binary << " started on a port in use";
    EXPECT_NE(code, -1) << binary << " did not exit";
    if (code == -1) second.Signal(SIGKILL);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_THAT(text.str(), HasSubstr(std::to_string(first.grpc_port))) << binary;
  }
}

}  // namespace
}  // namespace kvmesh
