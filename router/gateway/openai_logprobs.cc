#include "router/gateway/openai_logprobs.h"

#include <cmath>
#include <limits>
#include <string>

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

namespace {

ordered_json Bytes(const std::string& text) {
  ordered_json bytes = ordered_json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

ordered_json LogprobValue(const v1::TokenLogprob& e) {
  return e.has_logprob() ? ordered_json(e.logprob()) : ordered_json(nullptr);
}

}  // namespace

ordered_json ChatLogprobEntries(const std::vector<v1::TokenLogprob>& entries) {
  ordered_json content = ordered_json::array();
  for (const v1::TokenLogprob& e : entries) {
    ordered_json item;
    item["token"] = e.text();
    item["logprob"] = LogprobValue(e);
    item["bytes"] = Bytes(e.text());
    ordered_json top = ordered_json::array();
    for (const v1::TokenLogprob& alt : e.top()) {
      top.push_back(
          {{"token", alt.text()}, {"logprob", alt.logprob()}, {"bytes", Bytes(alt.text())}});
    }
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return content;
}

ordered_json ChatLogprobs(const std::vector<v1::TokenLogprob>& entries) {
  ordered_json out;
  out["content"] = ChatLogprobEntries(entries);
  out["refusal"] = nullptr;
  return out;
}

void AppendCompletionLogprobs(const std::vector<v1::TokenLogprob>& entries, size_t* offset,
                              ordered_json* out) {
  if (out->is_null()) {
    (*out)["tokens"] = ordered_json::array();
    (*out)["token_logprobs"] = ordered_json::array();
    (*out)["top_logprobs"] = ordered_json::array();
    (*out)["text_offset"] = ordered_json::array();
  }
  for (const v1::TokenLogprob& e : entries) {
    (*out)["tokens"].push_back(e.text());
    (*out)["token_logprobs"].push_back(LogprobValue(e));
    if (!e.has_logprob()) {
      (*out)["top_logprobs"].push_back(nullptr);
    } else {
      ordered_json top = ordered_json::object();
      for (const v1::TokenLogprob& alt : e.top()) top[alt.text()] = alt.logprob();
      if (!top.contains(e.text())) top[e.text()] = e.logprob();
      (*out)["top_logprobs"].push_back(std::move(top));
    }
    (*out)["text_offset"].push_back(*offset);
    *offset += e.text().size();
  }
}

double MeanLogprob(const std::vector<v1::TokenLogprob>& entries) {
  double sum = 0;
  int count = 0;
  for (const v1::TokenLogprob& e : entries) {
    if (!e.has_logprob() || std::isnan(e.logprob())) continue;
    sum += e.logprob();
    ++count;
  }
  return count == 0 ? -std::numeric_limits<double>::infinity() : sum / count;
}

}  // namespace kvmesh::router::gateway
