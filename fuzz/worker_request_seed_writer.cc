// Writes serialized kvmesh.v1.GenerateRequest seeds for worker_request_fuzz
// into a directory: a text prompt with stop strings, a token prompt with
// logit_bias and several choices, a grammar, special tokens shown and
// retained prefixes, prompt logprobs with a peer fetch, and a request that
// carries a field this worker does not know.
#include <google/protobuf/unknown_field_set.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "kvmesh/v1/worker.pb.h"

namespace {

using kvmesh::v1::GenerateRequest;

bool Write(const std::string& path, const GenerateRequest& request) {
  std::string bytes;
  if (!request.SerializeToString(&bytes)) return false;
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

GenerateRequest TextPrompt() {
  GenerateRequest r;
  r.set_request_id("seed-text");
  r.set_prompt_text("Once upon a time");
  r.set_add_special(true);
  r.set_max_tokens(16);
  r.add_stop("\n");
  r.add_stop("The end");
  r.mutable_sampling()->set_temperature(0.7f);
  r.mutable_sampling()->set_top_k(40);
  r.mutable_sampling()->set_top_p(0.9f);
  r.mutable_sampling()->set_min_p(0.05f);
  r.mutable_sampling()->set_repetition_penalty(1.1f);
  return r;
}

GenerateRequest TokenPrompt() {
  GenerateRequest r;
  for (int32_t id : {1, 9038, 2501, 263, 931}) r.add_prompt_tokens(id);
  r.set_max_tokens(8);
  r.set_n(2);
  r.set_logprobs(true);
  r.set_top_logprobs(5);
  r.set_ignore_eos(true);
  kvmesh::v1::SamplingParams* s = r.mutable_sampling();
  s->set_seed(1234);
  s->set_presence_penalty(0.5f);
  s->set_frequency_penalty(-0.25f);
  (*s->mutable_logit_bias())[13] = -100.0f;
  (*s->mutable_logit_bias())[29871] = 5.0f;
  return r;
}

GenerateRequest Grammar() {
  GenerateRequest r;
  r.set_prompt_text("Answer yes or no:");
  r.set_max_tokens(4);
  r.set_grammar("root ::= \" \"? (\"yes\" | \"no\") \".\"?\n");
  r.mutable_sampling()->set_temperature(0.0f);
  return r;
}

GenerateRequest SpecialTokens() {
  GenerateRequest r;
  r.set_prompt_text("<s>[INST] hi [/INST]</s>");
  r.set_add_special(true);
  r.set_parse_special(true);
  r.set_max_tokens(4);
  r.add_render_special_tokens(1);
  r.add_render_special_tokens(2);
  r.set_cache_salt("tenant-a");
  r.set_predicted_cached_tokens(16);
  kvmesh::v1::RetainPrefix* retain = r.add_retain();
  retain->set_tokens(4);
  retain->set_seconds(300);
  return r;
}

GenerateRequest PromptLogprobs() {
  GenerateRequest r;
  for (int32_t id : {1, 450, 4996, 17354, 1701}) r.add_prompt_tokens(id);
  r.set_max_tokens(0);
  r.set_prompt_logprobs(true);
  kvmesh::v1::PeerFetch* fetch = r.mutable_peer_fetch();
  fetch->set_address("127.0.0.1:50052");
  fetch->set_worker_id("w2");
  fetch->set_first_block(0);
  fetch->set_end_block(1);
  return r;
}

GenerateRequest UnknownField() {
  GenerateRequest r = TextPrompt();
  r.GetReflection()->MutableUnknownFields(&r)->AddVarint(1000, 7);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = Write(dir + "/text_prompt.pb", TextPrompt());
  ok &= Write(dir + "/token_prompt.pb", TokenPrompt());
  ok &= Write(dir + "/grammar.pb", Grammar());
  ok &= Write(dir + "/special_tokens.pb", SpecialTokens());
  ok &= Write(dir + "/prompt_logprobs.pb", PromptLogprobs());
  ok &= Write(dir + "/unknown_field.pb", UnknownField());
  if (!ok) {
    std::fprintf(stderr, "failed to write seeds into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
