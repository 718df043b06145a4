#include "worker/service/generate_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/gguf/gguf_file.h"
#include "common/tokenizer/tokenizer_config.h"

namespace kvmesh {
namespace {

// stories260K's vocabulary: 0 <unk>, 1 <s>, 2 </s> (control; </s> ends
// generation), then text.
std::unique_ptr<Tokenizer> StoriesTokenizer() {
  auto file = gguf::GgufFile::Open(std::string(KVMESH_SHARED_DIR) + "/models/stories260K.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  auto config = TokenizerConfigFromGguf(**file);
  EXPECT_TRUE(config.ok());
  auto tokenizer = Tokenizer::Create(std::move(config).value());
  EXPECT_TRUE(tokenizer.ok());
  return std::move(tokenizer).value();
}

class GenerateRequestTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> tokenizer_ = StoriesTokenizer();
  GrammarConstraints constraints_{*tokenizer_};
};

TEST_F(GenerateRequestTest, ConvertsTheRequest) {
  v1::GenerateRequest req;
  req.set_request_id("r1");
  req.add_prompt_tokens(1);
  req.add_prompt_tokens(403);
  req.set_max_tokens(5);
  req.mutable_sampling()->set_temperature(0);
  req.set_top_logprobs(5000);  // clamped
  req.add_retain()->set_tokens(99);
  auto er = ValidateGenerateRequest(req, *tokenizer_, constraints_);
  ASSERT_TRUE(er.ok()) << er.status().ToString();
  EXPECT_EQ(er->id, "r1");
  EXPECT_EQ(er->prompt, (std::vector<int32_t>{1, 403}));
  EXPECT_EQ(er->sampling.max_tokens, 5);
  EXPECT_EQ(er->sampling.temperature, 0.0f);
  EXPECT_EQ(er->top_logprobs, 1000);
  ASSERT_EQ(er->retain.size(), 1u);
  EXPECT_EQ(er->retain[0].tokens, 2);  // at most the prompt
  EXPECT_FALSE(er->constraint);
}

TEST_F(GenerateRequestTest, ErrorsNameTheField) {
  auto error = [&](const v1::GenerateRequest& r) {
    return ValidateGenerateRequest(r, *tokenizer_, constraints_).status().message();
  };
  v1::GenerateRequest req;
  req.add_prompt_tokens(1);
  req.set_max_tokens(-1);
  EXPECT_EQ(error(req), "max_tokens must be >= 0, got -1");
  req.set_max_tokens(1);
  req.set_prompt_text("x");
  EXPECT_EQ(error(req), "give prompt_tokens or prompt_text, not both");
  req.clear_prompt_text();
  req.add_render_special_tokens(512);
  EXPECT_EQ(error(req), "render_special_tokens[0] = 512 is outside the vocabulary (0..511)");
  req.clear_render_special_tokens();
  (*req.mutable_sampling()->mutable_logit_bias())[600] = 1;
  EXPECT_EQ(error(req), "logit_bias names token 600, outside the vocabulary (0..511)");
  req.mutable_sampling()->clear_logit_bias();
  req.GetReflection()->MutableUnknownFields(&req)->AddVarint(999, 1);
  EXPECT_EQ(error(req),
            "GenerateRequest has an unknown field (number 999); the client and worker protos "
            "disagree");
  req.GetReflection()->MutableUnknownFields(&req)->Clear();
  req.set_grammar("root ::= \"unterminated");
  EXPECT_FALSE(ValidateGenerateRequest(req, *tokenizer_, constraints_).ok());
}

// A control token the request renders is text to its grammar: the grammar
// is compiled after render_special_tokens are read (it was compiled before,
// over a vocabulary that hid them).
TEST_F(GenerateRequestTest, TheGrammarSeesTheSpecialTokensTheRequestRenders) {
  v1::GenerateRequest req;
  req.add_prompt_tokens(1);
  req.set_max_tokens(2);
  req.set_grammar(R"(root ::= "<s>" [a-z]*)");
  auto hidden = ValidateGenerateRequest(req, *tokenizer_, constraints_);
  ASSERT_TRUE(hidden.ok()) << hidden.status().ToString();
  ASSERT_TRUE(hidden->constraint);
  EXPECT_EQ(hidden->constraint->vocabulary->piece(1), "");

  req.add_render_special_tokens(1);
  auto shown = ValidateGenerateRequest(req, *tokenizer_, constraints_);
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  ASSERT_TRUE(shown->constraint);
  EXPECT_EQ(shown->constraint->vocabulary->piece(1), "<s>");
}

}  // namespace
}  // namespace kvmesh
