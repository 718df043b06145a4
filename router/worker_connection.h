// WorkerConnection: the router's gRPC client of one worker (a WorkerClient).
//
// It owns the gRPC channel and two background threads:
//  * a poller that calls Info (on first contact and whenever the worker's
//    epoch changes, i.e. it restarted) and Load every poll interval; a worker
//    that fails `max_failures` polls in a row is marked unhealthy. A poll
//    that only timed out while the worker was heard from on another call
//    (a token on a Generate stream, a KV event batch) within the last
//    rpc_timeout + poll_interval does not count: the worker is serving, and
//    the poll starved in a saturated router or worker. A refused connection
//    or any other error counts at once;
//  * a KV event subscriber: SubscribeKvEvents, a snapshot, then numbered
//    batches; a gap in the numbering, a new epoch or a broken stream means
//    events may be lost, so it tells the listener to forget the worker's
//    entries and subscribes again for a fresh snapshot.
// The listener (the registry) receives these callbacks on the connection's
// threads. Stop() joins both threads; Generate streams already open go on.
// Accessors are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/grpc_security.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "router/worker_client.h"

namespace kvmesh::router {

struct ConnectionOptions {
  // TLS and the service token on every call (plaintext, no token by default).
  std::shared_ptr<const ChannelSecurity> security = std::make_shared<const ChannelSecurity>();
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds rpc_timeout{2000};
  int max_failures = 3;
  std::chrono::milliseconds resubscribe_backoff{500};
};

class WorkerConnection final : public WorkerClient {
 public:
  WorkerConnection(std::string address, WorkerListener* listener, ConnectionOptions options);
  ~WorkerConnection() override;

  void Start() override;
  void Stop() override;

  const std::string& address() const override { return address_; }
  bool healthy() const override { return healthy_.load(); }
  void ReportFailure() override;
  v1::LoadResponse load() const override;
  bool has_info() const override;
  v1::InfoResponse info() const override;
  std::string worker_id() const override;
  std::string role() const override;
  std::unique_ptr<GenerateStream> Generate(const v1::GenerateRequest& request) override;

 private:
  void PollLoop();
  void SubscribeLoop();
  // OK, or why the Info call failed.
  grpc::StatusCode FetchInfo();
  // Something arrived from the worker (any call) now.
  void NoteHeard();
  bool HeardWithin(std::chrono::milliseconds window) const;
  void SetHealthy(bool healthy);
  bool WaitOrStop(std::chrono::milliseconds d);

  const std::string address_;
  WorkerListener* listener_;
  ConnectionOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  std::atomic<bool> healthy_{false};
  std::atomic<uint64_t> epoch_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                        // guarded by mu_
  bool has_info_ = false;                        // guarded by mu_
  v1::InfoResponse info_;                        // guarded by mu_
  v1::LoadResponse load_;                        // guarded by mu_
  grpc::ClientContext* subscription_ = nullptr;  // guarded by mu_: to cancel on Stop
  int failures_ = 0;                             // poller thread only
  // steady_clock nanoseconds of the last message from the worker.
  std::atomic<int64_t> last_heard_ns_{0};

  std::thread poller_;
  std::thread subscriber_;
};

}  // namespace kvmesh::router
