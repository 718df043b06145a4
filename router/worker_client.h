// WorkerClient: what the router needs of one worker, behind an interface so
// that RouterCore and the Registry can be tested without processes (a fake
// stands in for the gRPC client, router/worker_connection.h).
//
// Ownership: the Registry holds each client by shared_ptr, and so do the
// routing snapshots and every request's WorkerLease. A worker that leaves the
// membership (deregistered, dropped from DNS) is stopped at once — no more
// polls, no more events — but its object, its channel and its open streams
// live until the last request that leased it has ended.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kvmesh/v1/worker.pb.h"
#include "router/worker_load.h"

namespace kvmesh::router {

class WorkerClient;

// Receives what a client learns in the background, on the client's threads.
class WorkerListener {
 public:
  virtual ~WorkerListener() = default;
  // First contact, or the worker restarted (new epoch).
  virtual void OnWorkerInfo(WorkerClient* w, const v1::InfoResponse& info) = 0;
  virtual void OnHealthChanged(WorkerClient* w, bool healthy) = 0;
  // Forget everything indexed for this worker (before a fresh snapshot).
  virtual void OnIndexReset(WorkerClient* w) = 0;
  virtual void OnKvEvents(WorkerClient* w, const v1::KvEventBatch& batch) = 0;
};

// One Generate call's response stream.
class GenerateStream {
 public:
  virtual ~GenerateStream() = default;
  // The next message; false once the stream has ended (then call Finish).
  virtual bool Read(v1::GenerateResponse* response) = 0;
  // Asks the worker to stop; Read then returns false soon. Any thread, any
  // time until the stream is destroyed.
  virtual void Cancel() = 0;
  // How the call ended; once, after Read returned false.
  virtual grpc::Status Finish() = 0;
};

class WorkerClient {
 public:
  virtual ~WorkerClient() = default;

  // Starts the background work (polls, event subscription); Stop ends it and
  // is idempotent. Calls already started are unaffected by Stop.
  virtual void Start() = 0;
  virtual void Stop() = 0;

  virtual const std::string& address() const = 0;
  virtual bool healthy() const = 0;
  // Marks the worker unhealthy now (a forwarded call failed to connect);
  // it comes back when it answers again.
  virtual void ReportFailure() = 0;
  virtual v1::LoadResponse load() const = 0;
  virtual bool has_info() const = 0;
  virtual v1::InfoResponse info() const = 0;
  // The worker's id (its address until its Info arrives).
  virtual std::string worker_id() const = 0;
  // Its role for disaggregated serving: "both", "prefill" or "decode".
  virtual std::string role() const = 0;

  virtual std::unique_ptr<GenerateStream> Generate(const v1::GenerateRequest& request) = 0;

  // What a routing decision reads of the worker: the last load report and
  // worker_id(), without a lock (router/worker_load.h). The id stays valid
  // for the life of the process.
  RoutingLoad routing_load() const { return load_board_.Read(); }
  std::string_view routing_id() const { return *routing_id_.load(std::memory_order_acquire); }
  // Asks the memory for what routing_load(), routing_id(), inflight and
  // finished_since_poll read (kept together at the end of the object).
  void PrefetchRoutingState() const {
    const char* first = reinterpret_cast<const char*>(&inflight);
    const char* last = reinterpret_cast<const char*>(&load_board_) + LoadBoard::kReadBytes - 1;
    for (const char* p = first; p < last; p += 64) __builtin_prefetch(p);
    __builtin_prefetch(last);
  }

  // Requests this router has in flight to the worker (owned by WorkerLease).
  std::atomic<int32_t> inflight{0};
  // Requests of this router that finished since the last load report (a poll
  // or the load a KV event batch carries), which therefore still counts
  // them: subtracted from the reported load.
  std::atomic<int32_t> finished_since_poll{0};
  // Prompt tokens this router's requests on the worker still have to
  // compute (those not cached there when routed, until each streams its
  // first token; owned by WorkerLease): the worker's queue as far as this
  // router knows, which a burst routed between two load reports reaches
  // before any report does.
  std::atomic<int64_t> prefill_inflight{0};

 protected:
  // Implementations publish each load report and each change of worker_id().
  // The report counts what was sent and finished before it.
  void PublishLoad(const v1::LoadResponse& load) {
    load_board_.Publish(load);
    finished_since_poll = 0;
  }
  void PublishId(std::string_view id) {
    routing_id_.store(InternWorkerId(id), std::memory_order_release);
  }

 private:
  std::atomic<const std::string*> routing_id_{InternWorkerId("")};
  LoadBoard load_board_;
};

// A request's hold on a worker: keeps the client alive and counts the
// request in flight until the lease is destroyed, and its prompt tokens to
// compute until PrefillDone (or the lease's end).
class WorkerLease {
 public:
  explicit WorkerLease(std::shared_ptr<WorkerClient> worker, int64_t prefill_tokens = 0)
      : worker_(std::move(worker)), prefill_tokens_(std::max<int64_t>(0, prefill_tokens)) {
    ++worker_->inflight;
    worker_->prefill_inflight += prefill_tokens_;
  }
  ~WorkerLease() {
    PrefillDone();
    --worker_->inflight;
    ++worker_->finished_since_poll;
  }
  // The request streamed its first token: its prompt is computed.
  void PrefillDone() {
    worker_->prefill_inflight -= prefill_tokens_;
    prefill_tokens_ = 0;
  }
  WorkerLease(const WorkerLease&) = delete;
  WorkerLease& operator=(const WorkerLease&) = delete;

  WorkerClient* operator->() const { return worker_.get(); }
  WorkerClient& operator*() const { return *worker_; }

 private:
  std::shared_ptr<WorkerClient> worker_;
  int64_t prefill_tokens_;
};

}  // namespace kvmesh::router
