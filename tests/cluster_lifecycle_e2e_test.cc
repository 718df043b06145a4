// Process lifecycle of a real cluster on loopback: a router's drain on
// SIGTERM; a gRPC port already in use is an error at start; a client gone
// in the middle of a long prefill stops it on the worker.
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
#include "kvmesh/v1/worker.grpc.pb.h"
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

// A prompt prefilled 16 tokens a step, each step slowed to 150 ms (the
// worker's fault knob): about 4 s of prefill. The client cancels its gRPC
// call after 0.6 s, before any token; the router passes that on at the next
// prefill chunk, and the worker is idle within a second, not when the
// prefill would have ended.
TEST(ClusterProcessTest, AClientGoneDuringALongPrefillStopsItOnTheWorker) {
  ProcessHandle worker = StartWorker(
      kWorkerBin, {"--max-tokens-per-step", "16", "--admin-token", "s3cret"}, 0, "gone_w0");
  ASSERT_TRUE(worker.ok());
  ProcessHandle router = StartRouter(kRouterBin, {worker.grpc}, {}, "gone_router");
  ASSERT_TRUE(router.ok());
  ASSERT_TRUE(WaitForHealthyWorkers(router.grpc, 1, std::chrono::seconds(30)));
  auto worker_channel = grpc::CreateChannel(worker.grpc, grpc::InsecureChannelCredentials());
  auto admin = v1::WorkerAdmin::NewStub(worker_channel);
  auto worker_stub = v1::Worker::NewStub(worker_channel);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    v1::InjectFaultRequest slow;
    slow.set_step_delay_ms(150);
    v1::InjectFaultResponse resp;
    ASSERT_TRUE(admin->InjectFault(&ctx, slow, &resp).ok());
  }
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(router.grpc, grpc::InsecureChannelCredentials()));
  v1::GenerateTextRequest req;
  for (int i = 0; i < 440; ++i) req.add_prompt_tokens(300 + i % 200);
  req.mutable_options()->set_max_tokens(4);
  grpc::ClientContext ctx;
  auto reader = stub->Generate(&ctx, req);
  std::thread cancel([&ctx] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    ctx.TryCancel();
  });
  v1::GenerateTextResponse message;
  int tokens = 0;
  while (reader->Read(&message)) tokens += message.tokens_size();
  const grpc::Status status = reader->Finish();
  cancel.join();
  const auto cancelled_at = std::chrono::steady_clock::now();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(tokens, 0);
  // The worker is idle soon: a step or two, not the ~3.4 s of prefill left.
  bool idle = false;
  int polls = 0;
  while (!idle && std::chrono::steady_clock::now() - cancelled_at < std::chrono::seconds(10)) {
    grpc::ClientContext load_ctx;
    v1::LoadResponse load;
    ASSERT_TRUE(worker_stub->Load(&load_ctx, v1::LoadRequest(), &load).ok());
    idle = load.running() == 0 && load.waiting() == 0;
    ++polls;
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double idle_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count();
  EXPECT_TRUE(idle);
  EXPECT_LT(idle_after, 1.5) << "the worker kept prefilling after the client left";
  std::printf("worker idle %.2f s after the client cancelled (%d load polls)\n", idle_after, polls);
}

}  // namespace
}  // namespace kvmesh
