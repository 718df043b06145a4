#include "router/gateway/sse.h"

#include <gtest/gtest.h>

namespace kvmesh::router::gateway {
namespace {

TEST(SseTest, DataLine) {
  EXPECT_EQ(SseData(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseData(""), "data: \n\n");
}

TEST(SseTest, MultiLineDataSplitsIntoDataLines) {
  EXPECT_EQ(SseData("one\ntwo\r\nthree\rfour"),
            "data: one\ndata: two\ndata: three\ndata: four\n\n");
}

TEST(SseTest, NamedEvent) {
  EXPECT_EQ(SseEvent("message_stop", R"({"type":"message_stop"})"),
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

TEST(SseTest, CommentAndDone) {
  EXPECT_EQ(SseComment("keep-alive"), ": keep-alive\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace kvmesh::router::gateway
