// FakeWorkerClient: a WorkerClient for tests, with no process and no network.
//
// Each Generate call becomes a FakeCall that the test drives: it sends
// messages and finishes the call (from any thread, at any time), and sees
// whether the router cancelled it. `on_generate` decides what a new call
// does; without one the call answers one token and finishes. Health, load
// and Info are set by the test; Registry listeners are told of them by the
// test as the poller would (RegistryHarness in router/registry_test_util.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/worker_client.h"

namespace kvmesh::router {

class FakeCall {
 public:
  explicit FakeCall(v1::GenerateRequest request) : request_(std::move(request)) {}

  const v1::GenerateRequest& request() const { return request_; }

  // The worker's side.
  void Send(const v1::GenerateResponse& message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    queue_.push_back(message);
    cv_.notify_all();
  }
  void SendTokens(std::vector<int32_t> tokens, const std::string& text,
                  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED) {
    v1::GenerateResponse m;
    m.mutable_tokens()->Assign(tokens.begin(), tokens.end());
    m.set_text(text);
    m.set_finish_reason(finish);
    Send(m);
  }
  void Finish(grpc::Status status = grpc::Status::OK) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    status_ = std::move(status);
    cv_.notify_all();
  }
  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  bool WaitCancelled(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return cancelled_; });
  }

  // The router's side (FakeStream).
  bool Read(v1::GenerateResponse* out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || finished_; });
    if (queue_.empty()) return false;
    *out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    if (!finished_) {  // as gRPC does: the call ends, the rest is dropped
      finished_ = true;
      status_ = grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled");
      queue_.clear();
    }
    cv_.notify_all();
  }
  grpc::Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  const v1::GenerateRequest request_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::GenerateResponse> queue_;  // guarded by mu_
  bool finished_ = false;                   // guarded by mu_
  bool cancelled_ = false;                  // guarded by mu_
  grpc::Status status_;                     // guarded by mu_
};

class FakeStream final : public GenerateStream {
 public:
  explicit FakeStream(std::shared_ptr<FakeCall> call) : call_(std::move(call)) {}
  bool Read(v1::GenerateResponse* response) override { return call_->Read(response); }
  void Cancel() override { call_->Cancel(); }
  grpc::Status Finish() override { return call_->status(); }

 private:
  std::shared_ptr<FakeCall> call_;
};

class FakeWorkerClient final : public WorkerClient {
 public:
  FakeWorkerClient(std::string address, std::function<void()> on_destroy = {})
      : address_(std::move(address)), on_destroy_(std::move(on_destroy)) {
    PublishId(address_);
  }
  ~FakeWorkerClient() override {
    if (on_destroy_) on_destroy_();
  }

  // What each new call does (runs inside Generate, on the router's thread).
  void set_on_generate(std::function<void(const std::shared_ptr<FakeCall>&)> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    on_generate_ = std::move(fn);
  }
  void set_healthy(bool healthy) { healthy_ = healthy; }
  void set_load(const v1::LoadResponse& load) {
    std::lock_guard<std::mutex> lock(mu_);
    load_ = load;
    PublishLoad(load);
  }
  void set_info(const v1::InfoResponse& info) {
    std::lock_guard<std::mutex> lock(mu_);
    info_ = info;
    has_info_ = true;
    PublishId(info.worker_id().empty() ? address_ : info.worker_id());
  }
  std::vector<std::shared_ptr<FakeCall>> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int failures_reported() const { return failures_.load(); }
  bool started() const { return started_.load(); }
  bool stopped() const { return stopped_.load(); }

  // WorkerClient
  void Start() override { started_ = true; }
  void Stop() override { stopped_ = true; }
  const std::string& address() const override { return address_; }
  bool healthy() const override { return healthy_.load(); }
  void ReportFailure() override {
    ++failures_;
    healthy_ = false;
  }
  v1::LoadResponse load() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return load_;
  }
  bool has_info() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return has_info_;
  }
  v1::InfoResponse info() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return info_;
  }
  std::string worker_id() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return info_.worker_id().empty() ? address_ : info_.worker_id();
  }
  std::string role() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return info_.role().empty() ? "both" : info_.role();
  }
  std::unique_ptr<GenerateStream> Generate(const v1::GenerateRequest& request) override {
    auto call = std::make_shared<FakeCall>(request);
    std::function<void(const std::shared_ptr<FakeCall>&)> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(call);
      fn = on_generate_;
    }
    if (fn) {
      fn(call);
    } else {
      call->SendTokens({1}, "x", v1::FINISH_REASON_LENGTH);
      call->Finish();
    }
    return std::make_unique<FakeStream>(call);
  }

 private:
  const std::string address_;
  const std::function<void()> on_destroy_;
  std::atomic<bool> healthy_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<int> failures_{0};
  mutable std::mutex mu_;
  std::function<void(const std::shared_ptr<FakeCall>&)> on_generate_;  // guarded by mu_
  std::vector<std::shared_ptr<FakeCall>> calls_;                       // guarded by mu_
  v1::LoadResponse load_;                                              // guarded by mu_
  v1::InfoResponse info_;                                              // guarded by mu_
  bool has_info_ = false;                                              // guarded by mu_
};

}  // namespace kvmesh::router
