// WorkerConnection against an in-process gRPC worker whose Load answers can
// be stalled and whose KV event stream can fall silent: a poll that starves
// while the worker is still heard from does not take it out of the routing
// set, and a worker that is heard from on no call does leave it.
#include "router/worker_connection.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kvmesh/v1/worker.grpc.pb.h"

namespace kvmesh::router {
namespace {

using namespace std::chrono_literals;

class StallingWorker final : public v1::Worker::Service {
 public:
  std::atomic<bool> stall_load{false};  // Load answers after 1 s
  std::atomic<bool> silent{false};      // the event stream sends nothing
  // >= 0: each event batch carries a load with this many running requests,
  // of epoch batch_epoch.
  std::atomic<int> batch_running{-1};
  std::atomic<uint64_t> batch_epoch{7};

  grpc::Status Info(grpc::ServerContext*, const v1::InfoRequest*, v1::InfoResponse* out) override {
    out->set_worker_id("stalling");
    out->set_epoch(7);
    return grpc::Status::OK;
  }
  grpc::Status Load(grpc::ServerContext* ctx, const v1::LoadRequest*,
                    v1::LoadResponse* out) override {
    if (stall_load) {
      for (int i = 0; i < 100 && !ctx->IsCancelled(); ++i) std::this_thread::sleep_for(10ms);
    }
    out->set_epoch(7);
    return grpc::Status::OK;
  }
  grpc::Status SubscribeKvEvents(grpc::ServerContext* ctx, const v1::SubscribeKvEventsRequest*,
                                 grpc::ServerWriter<v1::KvEventBatch>* writer) override {
    v1::KvEventBatch batch;
    batch.set_epoch(7);
    batch.set_snapshot(true);
    if (!writer->Write(batch)) return grpc::Status::OK;
    batch.set_snapshot(false);
    for (uint64_t seq = 1; !ctx->IsCancelled(); std::this_thread::sleep_for(20ms)) {
      if (silent) continue;
      batch.set_sequence(seq++);
      batch.clear_load();
      if (batch_running >= 0) {
        batch.mutable_load()->set_running(static_cast<uint32_t>(batch_running.load()));
        batch.mutable_load()->set_epoch(batch_epoch);
      }
      if (!writer->Write(batch)) break;
    }
    return grpc::Status::OK;
  }
};

class HealthLog final : public WorkerListener {
 public:
  void OnWorkerInfo(WorkerClient*, const v1::InfoResponse&) override {}
  void OnHealthChanged(WorkerClient*, bool healthy) override {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.push_back(healthy);
  }
  void OnIndexReset(WorkerClient*) override {}
  void OnKvEvents(WorkerClient*, const v1::KvEventBatch&) override {}
  std::vector<bool> changes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<bool> changes_;
};

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// A StallingWorker on a loopback port and a connection to it that polls
// every 50 ms, healthy before each test begins.
class WorkerConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    ConnectionOptions options;
    options.poll_interval = 50ms;
    options.rpc_timeout = 500ms;  // a generous window against a loaded machine
    options.max_failures = 2;
    connection_ =
        std::make_shared<WorkerConnection>("127.0.0.1:" + std::to_string(port), &log_, options);
    connection_->Start();
    ASSERT_TRUE(WaitFor([&] { return connection_->healthy(); }, 10s));
  }
  void TearDown() override {
    if (connection_) connection_->Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 1s);
  }

  StallingWorker service_;
  HealthLog log_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<WorkerConnection> connection_;
};

TEST_F(WorkerConnectionTest, AStarvedPollDoesNotUnseatAWorkerThatIsStillHeardFrom) {
  // Polls time out for 1.5 s (3 in a row at most) while events keep coming.
  service_.stall_load = true;
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(connection_->healthy());
  EXPECT_EQ(log_.changes(), std::vector<bool>{true});

  // Nothing from the worker on any call: out within a few polls.
  service_.silent = true;
  EXPECT_TRUE(WaitFor([&] { return !connection_->healthy(); }, 5s));

  // Answering again: back in.
  service_.stall_load = false;
  service_.silent = false;
  EXPECT_TRUE(WaitFor([&] { return connection_->healthy(); }, 5s));
  // healthy() turns before the listener hears of it.
  EXPECT_TRUE(WaitFor([&] { return log_.changes().size() == 3; }, 5s));
  EXPECT_EQ(log_.changes(), (std::vector<bool>{true, false, true}));
}

// A worker's load rides on its KV event batches: the router sees it at the
// batches' pace even while its polls go unanswered, and ignores a load of
// another epoch (the poll first fetches the new epoch's info).
TEST_F(WorkerConnectionTest, EventBatchesCarryTheLoad) {
  EXPECT_EQ(connection_->routing_load().running, 0);

  service_.stall_load = true;  // polls answer nothing new from here on
  service_.batch_running = 5;
  EXPECT_TRUE(WaitFor([&] { return connection_->routing_load().running == 5; }, 5s));
  EXPECT_EQ(connection_->load().running(), 5u);

  service_.batch_epoch = 8;
  service_.batch_running = 9;
  std::this_thread::sleep_for(300ms);  // 15 batches
  EXPECT_EQ(connection_->routing_load().running, 5);
}

}  // namespace
}  // namespace kvmesh::router
