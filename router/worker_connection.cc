#include "router/worker_connection.h"

#include <functional>

#include "common/log.h"

namespace kvmesh::router {
namespace {

class GrpcGenerateStream final : public GenerateStream {
 public:
  // `heard` runs on each message (the connection outlives its streams: a
  // request's WorkerLease holds both).
  GrpcGenerateStream(v1::Worker::Stub* stub, const ChannelSecurity& security,
                     const v1::GenerateRequest& request, std::function<void()> heard)
      : reader_(Start(stub, security, request)), heard_(std::move(heard)) {}
  bool Read(v1::GenerateResponse* response) override {
    if (!reader_->Read(response)) return false;
    heard_();
    return true;
  }
  void Cancel() override { context_.TryCancel(); }
  grpc::Status Finish() override { return reader_->Finish(); }

 private:
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> Start(
      v1::Worker::Stub* stub, const ChannelSecurity& security, const v1::GenerateRequest& request) {
    security.Authorize(&context_);
    return stub->Generate(&context_, request);
  }

  grpc::ClientContext context_;  // first: the reader uses it
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader_;
  std::function<void()> heard_;
};

}  // namespace

WorkerConnection::WorkerConnection(std::string address, WorkerListener* listener,
                                   ConnectionOptions options)
    : address_(std::move(address)), listener_(listener), options_(options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // Reconnect quickly after a worker restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  PublishId(address_);
  channel_ = options_.security->Dial(address_, args);
  stub_ = v1::Worker::NewStub(channel_);
}

WorkerConnection::~WorkerConnection() { Stop(); }

void WorkerConnection::Start() {
  poller_ = std::thread([this] { PollLoop(); });
  subscriber_ = std::thread([this] { SubscribeLoop(); });
}

void WorkerConnection::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (subscription_ != nullptr) subscription_->TryCancel();
  }
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (subscriber_.joinable()) subscriber_.join();
}

bool WorkerConnection::WaitOrStop(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, d, [this] { return stopping_; });
}

void WorkerConnection::SetHealthy(bool healthy) {
  if (healthy_.exchange(healthy) != healthy) {
    Log(healthy ? LogLevel::kInfo : LogLevel::kWarning, "router",
        "worker " + address_ +
            (healthy ? " is healthy" : " is unhealthy: leaving the routing set"));
    listener_->OnHealthChanged(this, healthy);
  }
}

void WorkerConnection::ReportFailure() { SetHealthy(false); }

std::unique_ptr<GenerateStream> WorkerConnection::Generate(const v1::GenerateRequest& request) {
  return std::make_unique<GrpcGenerateStream>(stub_.get(), *options_.security, request,
                                              [this] { NoteHeard(); });
}

v1::LoadResponse WorkerConnection::load() const {
  std::lock_guard<std::mutex> lock(mu_);
  return load_;
}

bool WorkerConnection::has_info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return has_info_;
}

v1::InfoResponse WorkerConnection::info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return info_;
}

std::string WorkerConnection::worker_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return info_.worker_id().empty() ? address_ : info_.worker_id();
}

std::string WorkerConnection::role() const {
  std::lock_guard<std::mutex> lock(mu_);
  return info_.role().empty() ? "both" : info_.role();
}

void WorkerConnection::NoteHeard() {
  last_heard_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                       std::memory_order_relaxed);
}

bool WorkerConnection::HeardWithin(std::chrono::milliseconds window) const {
  const int64_t last = last_heard_ns_.load(std::memory_order_relaxed);
  if (last == 0) return false;
  const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                     std::chrono::steady_clock::duration(last);
  return since <= window;
}

grpc::StatusCode WorkerConnection::FetchInfo() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  options_.security->Authorize(&ctx);
  v1::InfoResponse info;
  const grpc::Status status = stub_->Info(&ctx, v1::InfoRequest(), &info);
  if (!status.ok()) return status.error_code();
  NoteHeard();
  {
    std::lock_guard<std::mutex> lock(mu_);
    info_ = info;
    has_info_ = true;
  }
  PublishId(info.worker_id().empty() ? address_ : info.worker_id());
  epoch_ = info.epoch();
  listener_->OnWorkerInfo(this, info);
  return grpc::StatusCode::OK;
}

void WorkerConnection::PollLoop() {
  using grpc::StatusCode;
  do {
    StatusCode failed = StatusCode::OK;
    if (!has_info()) failed = FetchInfo();
    if (failed == StatusCode::OK) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
      options_.security->Authorize(&ctx);
      v1::LoadResponse load;
      failed = stub_->Load(&ctx, v1::LoadRequest(), &load).error_code();
      if (failed == StatusCode::OK && load.epoch() != epoch_.load()) failed = FetchInfo();
      if (failed == StatusCode::OK) {
        NoteHeard();
        std::lock_guard<std::mutex> lock(mu_);
        load_ = load;
        PublishLoad(load);
      }
    }
    if (failed == StatusCode::OK) {
      failures_ = 0;
      SetHealthy(true);
    } else if (failed == StatusCode::DEADLINE_EXCEEDED &&
               HeardWithin(options_.rpc_timeout + options_.poll_interval)) {
      // Serving, but this poll starved: neither a failure nor an answer.
    } else if (++failures_ >= options_.max_failures || !healthy_) {
      SetHealthy(false);
    }
  } while (!WaitOrStop(options_.poll_interval));
}

void WorkerConnection::SubscribeLoop() {
  while (!WaitOrStop(std::chrono::milliseconds(0))) {
    if (!has_info()) {
      if (WaitOrStop(options_.resubscribe_backoff)) return;
      continue;
    }
    grpc::ClientContext ctx;
    options_.security->Authorize(&ctx);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      subscription_ = &ctx;
    }
    auto reader = stub_->SubscribeKvEvents(&ctx, v1::SubscribeKvEventsRequest());
    v1::KvEventBatch batch;
    uint64_t epoch = 0, sequence = 0;
    bool started = false;
    while (reader->Read(&batch)) {
      NoteHeard();
      const bool gap = started && (batch.epoch() != epoch || batch.sequence() != sequence + 1);
      if (batch.snapshot() || gap || !started) {
        if (gap) {
          Log(LogLevel::kWarning, "router",
              "KV events from " + address_ + " skipped a batch or changed epoch: resubscribing");
          break;
        }
        listener_->OnIndexReset(this);
      }
      started = true;
      epoch = batch.epoch();
      sequence = batch.sequence();
      listener_->OnKvEvents(this, batch);
      // The load the worker sent with the batch: fresher than the last
      // poll's (a busy worker writes batches every step). Another epoch's
      // is left to the poll, which fetches the worker's info first.
      if (batch.has_load() && batch.load().epoch() == epoch_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        load_ = batch.load();
        PublishLoad(load_);
      }
    }
    ctx.TryCancel();
    reader->Finish();
    {
      std::lock_guard<std::mutex> lock(mu_);
      subscription_ = nullptr;
    }
    listener_->OnIndexReset(this);  // events may be lost until the next snapshot
    if (WaitOrStop(options_.resubscribe_backoff)) return;
  }
}

}  // namespace kvmesh::router
