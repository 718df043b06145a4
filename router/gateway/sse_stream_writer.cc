#include "router/gateway/sse_stream_writer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

SseStreamWriter::SseStreamWriter(std::shared_ptr<GenerationStream> stream,
                                 std::unique_ptr<StreamEncoder> encoder,
                                 GenerationStream::Batch first, std::chrono::milliseconds keepalive)
    : stream_(std::move(stream)),
      encoder_(std::move(encoder)),
      pending_(std::move(first)),
      keepalive_(keepalive),
      last_write_(std::chrono::steady_clock::now()) {}

SseStreamWriter::Step SseStreamWriter::WriteNext(const Write& write) {
  if (done_) return Step::kDone;
  GenerationStream::Batch batch;
  if (pending_.has_value()) {
    batch = std::move(*pending_);
    pending_.reset();
  } else {
    batch = stream_->Next(std::min(keepalive_, kPollInterval));
  }
  std::string text;
  for (const v1::GenerateTextResponse& message : batch.messages) text += encoder_->Encode(message);
  if (batch.finished) text += encoder_->Finish(batch.status);
  auto now = std::chrono::steady_clock::now();
  // A prefill chunk done: write a keep-alive (at most one per
  // kProgressWriteInterval), since only a write tells whether the client is
  // still there, and one gone stops its prefill here rather than at the
  // first token.
  const bool probe = batch.progress > 0 && now - last_write_ >= kProgressWriteInterval;
  if (text.empty() && (probe || now - last_write_ >= keepalive_)) {
    text = encoder_->KeepAlive();
    if (text.empty()) text = SseComment("keep-alive");
  }
  if (!text.empty()) {
    if (!write(text)) {
      stream_->Cancel();
      return Step::kClientGone;
    }
    last_write_ = now;
  }
  done_ = batch.finished;
  return done_ ? Step::kDone : Step::kMore;
}

}  // namespace kvmesh::router::gateway
