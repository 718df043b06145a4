#include "router/model_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvmesh::router {
namespace {

using ::testing::HasSubstr;

TEST(ModelNamesTest, PatternsMatchRuns) {
  EXPECT_TRUE(MatchesPattern("claude-*", "claude-sonnet-4-5-20250929"));
  EXPECT_TRUE(MatchesPattern("*", ""));
  EXPECT_TRUE(MatchesPattern("gpt-*-mini", "gpt-4o-mini"));
  EXPECT_FALSE(MatchesPattern("gpt-*-mini", "gpt-4o"));
  EXPECT_FALSE(MatchesPattern("claude-*", "anthropic/claude"));
  EXPECT_TRUE(MatchesPattern("a*b*c", "axxbyyc"));
}

TEST(ModelNamesTest, OneServedModelAnswersAnyNameUnlessStrict) {
  const std::vector<std::string> one = {"qwen3"};
  EXPECT_EQ(*ResolveModelName("claude-sonnet-4-5", one, {}, false), "qwen3");
  EXPECT_EQ(*ResolveModelName("", one, {}, true), "qwen3");
  auto strict = ResolveModelName("claude-sonnet-4-5", one, {}, true);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(strict.status().message(), HasSubstr("claude-sonnet-4-5"));
  EXPECT_THAT(strict.status().message(), HasSubstr("qwen3"));
}

TEST(ModelNamesTest, AliasesPickAmongSeveralModels) {
  const std::vector<std::string> two = {"qwen3", "llama"};
  const std::vector<ModelAlias> aliases = {*ParseModelAlias("claude-*=qwen3"),
                                           *ParseModelAlias("gpt-*=llama"),
                                           *ParseModelAlias("x-*=missing")};
  EXPECT_EQ(*ResolveModelName("claude-haiku-4-5", two, aliases, true), "qwen3");
  EXPECT_EQ(*ResolveModelName("gpt-4o", two, aliases, false), "llama");
  EXPECT_EQ(*ResolveModelName("llama", two, aliases, true), "llama");
  EXPECT_FALSE(ResolveModelName("x-1", two, aliases, false).ok());  // alias to nothing served
  EXPECT_THAT(ResolveModelName("", two, aliases, false).status().message(), HasSubstr("name one"));
  EXPECT_FALSE(ParseModelAlias("no-equals").ok());
  EXPECT_FALSE(ParseModelAlias("=x").ok());
}

}  // namespace
}  // namespace kvmesh::router
