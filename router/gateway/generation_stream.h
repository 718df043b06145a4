// GenerationStream: runs one InferenceCore call on a thread of its own and
// hands the messages it produces to the HTTP thread that writes them out.
//
// Why a thread: the core's calls block until the generation ends, while an
// HTTP response must decide its status before its first byte. Running the
// call beside the handler lets the handler wait for the first message (or an
// early failure, which then becomes a proper 4xx/5xx) and stream the rest.
//
// One producer (the core call, on the stream's thread) and one consumer (the
// HTTP thread calling Next()). Cancel() may be called from any thread; the
// core sees it as `false` from its message callback, at its next message.
// The destructor cancels and joins, so it lasts until the core returns: an
// InferenceCore must return promptly once a callback returned false.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "router/inference_core.h"

namespace kvmesh::router::gateway {

class GenerationStream {
 public:
  // The core call to run, e.g. [&](auto& cb) { return core.Chat(request, cb); }.
  using CoreCall = std::function<Status(const MessageCallback&)>;

  // Starts `call` on a new thread at once.
  explicit GenerationStream(CoreCall call);
  ~GenerationStream();

  GenerationStream(const GenerationStream&) = delete;
  GenerationStream& operator=(const GenerationStream&) = delete;

  struct Batch {
    std::vector<v1::GenerateTextResponse> messages;  // in the core's order
    bool finished = false;                           // the call has returned
    Status status;                                   // its result, when finished
    // Progress messages (IsProgress: a prefill chunk done, nothing for the
    // client) since the last batch, and the worker of the first of them.
    int progress = 0;
    std::string progress_worker;
  };

  // Waits until a message or a progress message is queued or the call
  // returns, at most `timeout`, and takes everything queued. After a Batch with `finished` set,
  // later calls return empty finished batches with the same status.
  Batch Next(std::chrono::milliseconds timeout);

  // Makes the core's next callback return false (the client went away).
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  void Run(const CoreCall& call);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<v1::GenerateTextResponse> queue_;  // guarded by mutex_
  int progress_ = 0;                            // guarded by mutex_
  std::string progress_worker_;                 // guarded by mutex_
  bool finished_ = false;                       // guarded by mutex_
  Status status_;                               // guarded by mutex_
  std::atomic<bool> cancelled_{false};
  std::thread thread_;  // last: starts once every other member exists
};

}  // namespace kvmesh::router::gateway
