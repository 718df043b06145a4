#include "router/gateway/generation_stream.h"

#include <utility>

namespace kvmesh::router::gateway {

GenerationStream::GenerationStream(CoreCall call)
    : thread_([this, call = std::move(call)] { Run(call); }) {}

GenerationStream::~GenerationStream() {
  Cancel();
  thread_.join();
}

void GenerationStream::Run(const CoreCall& call) {
  Status status = call([this](const v1::GenerateTextResponse& message) {
    if (cancelled_.load()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (IsProgress(message)) {
        // Nothing to write, but the writer may use it to learn whether its
        // client is still there.
        if (progress_++ == 0) progress_worker_ = message.worker();
      } else {
        queue_.push_back(message);
      }
    }
    ready_.notify_one();
    return true;
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    status_ = std::move(status);
  }
  ready_.notify_one();
}

GenerationStream::Batch GenerationStream::Next(std::chrono::milliseconds timeout) {
  Batch batch;
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [this] { return !queue_.empty() || progress_ > 0 || finished_; });
  batch.messages.assign(std::make_move_iterator(queue_.begin()),
                        std::make_move_iterator(queue_.end()));
  queue_.clear();
  batch.progress = std::exchange(progress_, 0);
  batch.progress_worker = std::move(progress_worker_);
  progress_worker_.clear();
  batch.finished = finished_;
  if (finished_) batch.status = status_;
  return batch;
}

}  // namespace kvmesh::router::gateway
