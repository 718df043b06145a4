// Process lifecycle of a real cluster on loopback: a router's drain on
// SIGTERM; a gRPC port already in use is an error at start; a client gone
// in the middle of a long prefill (gRPC or HTTP) stops it on the worker.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
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

// A worker that prefills 16 tokens a step, each step slowed to 150 ms (the
// worker's fault knob), behind a router: a 440-token prompt is about 4 s of
// prefill.
struct SlowPrefillCluster {
  ProcessHandle worker, router;
  std::unique_ptr<v1::Worker::Stub> worker_stub;

  explicit SlowPrefillCluster(const std::string& name) {
    worker = StartWorker(kWorkerBin, {"--max-tokens-per-step", "16", "--admin-token", "s3cret"}, 0,
                         name + "_w0");
    if (!worker.ok()) return;
    router = StartRouter(kRouterBin, {worker.grpc}, {}, name + "_router");
    if (!router.ok() || !WaitForHealthyWorkers(router.grpc, 1, std::chrono::seconds(30))) return;
    auto channel = grpc::CreateChannel(worker.grpc, grpc::InsecureChannelCredentials());
    worker_stub = v1::Worker::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret");
    v1::InjectFaultRequest slow;
    slow.set_step_delay_ms(150);
    v1::InjectFaultResponse resp;
    if (!v1::WorkerAdmin::NewStub(channel)->InjectFault(&ctx, slow, &resp).ok())
      worker_stub.reset();
  }
  bool ok() const { return worker_stub != nullptr; }

  // Seconds from `since` until the worker runs and queues nothing (at most
  // 10 s; -1 if it never is).
  double SecondsUntilIdle(std::chrono::steady_clock::time_point since) {
    while (std::chrono::steady_clock::now() - since < std::chrono::seconds(10)) {
      grpc::ClientContext ctx;
      v1::LoadResponse load;
      if (worker_stub->Load(&ctx, v1::LoadRequest(), &load).ok() && load.running() == 0 &&
          load.waiting() == 0) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
};

// The client cancels its gRPC call after 0.6 s, before any token; the
// router passes that on at the next prefill chunk, and the worker is idle
// within a second, not when the prefill would have ended.
TEST(ClusterProcessTest, AClientGoneDuringALongPrefillStopsItOnTheWorker) {
  SlowPrefillCluster cluster("gone");
  ASSERT_TRUE(cluster.ok());
  auto stub = v1::Inference::NewStub(
      grpc::CreateChannel(cluster.router.grpc, grpc::InsecureChannelCredentials()));
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
  // A step or two, not the ~3.4 s of prefill left.
  const double idle_after = cluster.SecondsUntilIdle(cancelled_at);
  EXPECT_GE(idle_after, 0) << "the worker never went idle";
  EXPECT_LT(idle_after, 1.5) << "the worker kept prefilling after the client left";
  std::printf("worker idle %.2f s after the client cancelled\n", idle_after);
}

// The same through the HTTP gateway, where only a write notices a client
// that left: a streamed OpenAI completion, whose connection the client
// closes after 0.6 s without a token. The gateway answers each prefill chunk
// with a keep-alive comment, the second write after the close fails, and
// the worker is idle soon after, not when the prefill would have ended.
TEST(ClusterProcessTest, AnHttpClientGoneDuringALongPrefillStopsItOnTheWorker) {
  SlowPrefillCluster cluster("gone_http");
  ASSERT_TRUE(cluster.ok());
  const int port = std::stoi(cluster.router.http.substr(cluster.router.http.rfind(':') + 1));
  std::string prompt;
  for (int i = 0; i < 440; ++i) prompt += (i ? "," : "") + std::to_string(300 + i % 200);
  const std::string body = R"({"prompt":[)" + prompt + R"(],"max_tokens":4,"stream":true})";
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  // Read what comes in the first 0.6 s: the 200 and keep-alives, no token.
  std::string received;
  const auto opened = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - opened < std::chrono::milliseconds(600)) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const auto closed_at = std::chrono::steady_clock::now();
  EXPECT_THAT(received, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(received, HasSubstr(": keep-alive"));
  EXPECT_EQ(received.find("\"text\""), std::string::npos) << received;
  const double idle_after = cluster.SecondsUntilIdle(closed_at);
  EXPECT_GE(idle_after, 0) << "the worker never went idle";
  EXPECT_LT(idle_after, 1.5) << "the worker kept prefilling after the client left";
  std::printf("worker idle %.2f s after the HTTP client closed its connection\n", idle_after);
}

}  // namespace
}  // namespace kvmesh
