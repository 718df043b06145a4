// SseStreamWriter: moves one streamed response from its GenerationStream to
// the client: takes the core's messages as they come, encodes them as the
// API's server-sent events, and hands the text to a write function (the HTTP
// connection). When the generation is idle for `keepalive`, it writes the
// encoder's KeepAlive() (Anthropic's ping event) or else an SSE comment;
// proxies then keep the connection open, and a client that left is noticed
// even while nothing is generated. During a long prefill it writes the same
// keep-alive for each prefill chunk (at most one per kProgressWriteInterval):
// a socket only reports a peer that left when written to, and the second
// write after the client closed fails. A failed write cancels the generation.
//
// Used by one thread at a time (the connection's); Cancel() from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "router/gateway/generation_stream.h"
#include "router/gateway/stream_encoder.h"

namespace kvmesh::router::gateway {

class SseStreamWriter {
 public:
  // `first` is what the caller already took from `stream` (the gateway waits
  // for the first message before it answers); it is written first.
  SseStreamWriter(std::shared_ptr<GenerationStream> stream, std::unique_ptr<StreamEncoder> encoder,
                  GenerationStream::Batch first, std::chrono::milliseconds keepalive);

  // Returns false when the text could not be written (the client is gone).
  using Write = std::function<bool(std::string_view text)>;

  enum class Step {
    kMore,        // call again
    kDone,        // the stream's closing events are written
    kClientGone,  // a write failed; the generation is cancelled
  };

  // Waits up to kPollInterval for more of the generation, then writes what
  // there is.
  Step WriteNext(const Write& write);

  void Cancel() { stream_->Cancel(); }

  // Bounds how long WriteNext() blocks, so the server notices a shutdown.
  static constexpr std::chrono::milliseconds kPollInterval{100};
  // The least time between two keep-alives written for prefill chunks.
  static constexpr std::chrono::milliseconds kProgressWriteInterval{100};

 private:
  std::shared_ptr<GenerationStream> stream_;
  std::unique_ptr<StreamEncoder> encoder_;
  std::optional<GenerationStream::Batch> pending_;
  std::chrono::milliseconds keepalive_;
  std::chrono::steady_clock::time_point last_write_;
  bool done_ = false;
};

}  // namespace kvmesh::router::gateway
