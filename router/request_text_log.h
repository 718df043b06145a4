// RequestTextLog: a request's prompt and output text in the router's log, only
// when the operator asks for it (router option log_request_text).
//
// Logs hold no prompt or output text otherwise, at any log level: the router
// and the workers log request ids, workers, token counts and errors that name
// fields and limits, never what a user wrote or what a model answered. An
// operator debugging a deployment can switch this on; it logs, at info level,
// the prompt as the model sees it (the detokenized prompt, chat template
// applied) when the request is routed, and each choice's output text when it
// ends, quoted on one line (QuotedText).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "router/inference_core.h"

namespace kvmesh {
class Tokenizer;
}

namespace kvmesh::router {

class RequestTextLog {
 public:
  // Off: callback() is `client` itself, and nothing is logged. Without a
  // tokenizer the prompt is logged as token ids.
  RequestTextLog(bool on, std::string_view request_id, const Tokenizer* tokenizer,
                 std::span<const int32_t> prompt, const MessageCallback& client);
  // Logs each choice's output so far (the request ended, well or not).
  ~RequestTextLog();
  RequestTextLog(const RequestTextLog&) = delete;
  RequestTextLog& operator=(const RequestTextLog&) = delete;

  // What the router relays the workers' messages to.
  const MessageCallback& callback() const { return on_ ? recording_ : client_; }

 private:
  const bool on_;
  const std::string request_id_;
  const MessageCallback& client_;
  MessageCallback recording_;
  std::map<uint32_t, std::string> outputs_;  // by choice
};

}  // namespace kvmesh::router
