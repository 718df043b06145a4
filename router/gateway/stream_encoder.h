// StreamEncoder: turns the core's message stream into one API's server-sent
// events (OpenAI chunks, Anthropic's message_start … message_stop). Encoders
// only format text; the gateway writes it. One encoder per response, used by
// one thread at a time.
#pragma once

#include <string>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"

namespace kvmesh::router::gateway {

class StreamEncoder {
 public:
  virtual ~StreamEncoder() = default;

  // The events for one message of the core's stream; the first call also
  // opens the stream (OpenAI's role chunk, Anthropic's message_start).
  virtual std::string Encode(const v1::GenerateTextResponse& message) = 0;

  // The events that close the stream: the finish and usage events and the
  // end marker when `status` is OK, else an error event in the API's format.
  // Call once, after the last Encode().
  virtual std::string Finish(const Status& status) = 0;

  // Something to send while the core is silent (a long prefill), so proxies
  // and clients keep the connection; it must not change what the stream
  // means. Empty: the API has nothing for it.
  virtual std::string KeepAlive() { return ""; }
};

}  // namespace kvmesh::router::gateway
