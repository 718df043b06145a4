// WorkerConnection: the router's link to one worker.
//
// It owns the gRPC channel and two background threads:
//  * a poller that calls Info (on first contact and whenever the worker's
//    epoch changes, i.e. it restarted) and Load every poll interval; a worker
//    that fails `max_failures` polls in a row is marked unhealthy;
//  * a KV event subscriber: SubscribeKvEvents, a snapshot, then numbered
//    batches; a gap in the numbering, a new epoch or a broken stream means
//    events may be lost, so it tells the listener to forget the worker's
//    entries and subscribes again for a fresh snapshot.
// The listener (the registry) receives these callbacks on the connection's
// threads. Stop() joins both threads. Accessors are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kvmesh/v1/worker.grpc.pb.h"

namespace kvmesh::router {

class WorkerConnection;

class WorkerListener {
 public:
  virtual ~WorkerListener() = default;
  // First contact, or the worker restarted (new epoch).
  virtual void OnWorkerInfo(WorkerConnection* w, const v1::InfoResponse& info) = 0;
  virtual void OnHealthChanged(WorkerConnection* w, bool healthy) = 0;
  // Forget everything indexed for this worker (before a fresh snapshot).
  virtual void OnIndexReset(WorkerConnection* w) = 0;
  virtual void OnKvEvents(WorkerConnection* w, const v1::KvEventBatch& batch) = 0;
};

struct ConnectionOptions {
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds rpc_timeout{2000};
  int max_failures = 3;
  std::chrono::milliseconds resubscribe_backoff{500};
};

class WorkerConnection {
 public:
  WorkerConnection(std::string address, WorkerListener* listener, ConnectionOptions options);
  ~WorkerConnection();

  void Start();
  void Stop();

  const std::string& address() const { return address_; }
  v1::Worker::Stub& stub() { return *stub_; }
  bool healthy() const { return healthy_.load(); }
  // Marks the worker unhealthy now (a forwarded call failed to connect); the
  // poller brings it back when it answers again.
  void ReportFailure();
  v1::LoadResponse load() const;
  bool has_info() const;
  v1::InfoResponse info() const;
  std::string worker_id() const;
  // Its role for disaggregated serving: "both", "prefill" or "decode".
  std::string role() const;

  // Requests this router has in flight to the worker.
  std::atomic<int32_t> inflight{0};
  // Requests of this router that finished since the last Load report, which
  // therefore still counts them: subtracted from the reported load.
  std::atomic<int32_t> finished_since_poll{0};

 private:
  void PollLoop();
  void SubscribeLoop();
  bool FetchInfo();
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

  std::thread poller_;
  std::thread subscriber_;
};

}  // namespace kvmesh::router
