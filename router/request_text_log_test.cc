#include "router/request_text_log.h"

#include <gtest/gtest.h>

#include "common/log.h"

namespace kvmesh::router {
namespace {

TEST(RequestTextLogTest, QuotesTextOnOneLine) {
  EXPECT_EQ(QuotedText("a \"b\"\\c\nd\te\x01"), R"("a \"b\"\\c\nd\x09e\x01")");
  EXPECT_EQ(QuotedText("héllo"), "\"héllo\"");
  EXPECT_EQ(QuotedText("abcdef", 3), "\"abc...\"");
}

TEST(RequestTextLogTest, OffPassesTheClientThroughAndOnRecordsEachChoice) {
  int seen = 0;
  const MessageCallback client = [&seen](const v1::GenerateTextResponse&) {
    ++seen;
    return seen < 3;
  };
  const std::vector<int32_t> prompt = {1, 2};
  {
    const RequestTextLog off(false, "r1", nullptr, prompt, client);
    EXPECT_EQ(&off.callback(), &client);
  }
  const RequestTextLog on(true, "r2", nullptr, prompt, client);
  EXPECT_NE(&on.callback(), &client);
  v1::GenerateTextResponse m;
  m.set_text("x");
  EXPECT_TRUE(on.callback()(m));
  m.set_choice(1);
  EXPECT_TRUE(on.callback()(m));
  // The client's answer (stop reading) is passed back.
  EXPECT_FALSE(on.callback()(m));
  EXPECT_EQ(seen, 3);
}

}  // namespace
}  // namespace kvmesh::router
