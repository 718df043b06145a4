#include "router/gateway/sse_stream_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kvmesh::router::gateway {
namespace {

using std::chrono::milliseconds;

// Formats messages as "m:<text>\n" and the end as "end:<status>\n".
class TextEncoder : public StreamEncoder {
 public:
  std::string Encode(const v1::GenerateTextResponse& message) override {
    return "m:" + message.text() + "\n";
  }
  std::string Finish(const Status& status) override { return "end:" + status.ToString() + "\n"; }
};

v1::GenerateTextResponse Message(const std::string& text) {
  v1::GenerateTextResponse message;
  message.set_text(text);
  return message;
}

GenerationStream::Batch First(GenerationStream& stream) {
  GenerationStream::Batch first;
  while (first.messages.empty() && !first.finished) first = stream.Next(milliseconds(1000));
  return first;
}

TEST(SseStreamWriterTest, WritesEverythingThenTheEnd) {
  auto stream = std::make_shared<GenerationStream>([](const MessageCallback& on_message) {
    for (const char* piece : {"a", "b", "c"}) on_message(Message(piece));
    return Status::Ok();
  });
  SseStreamWriter writer(stream, std::make_unique<TextEncoder>(), First(*stream),
                         milliseconds(10000));
  std::string written;
  SseStreamWriter::Step step = SseStreamWriter::Step::kMore;
  for (int rounds = 0; step == SseStreamWriter::Step::kMore && rounds < 100; ++rounds) {
    step = writer.WriteNext([&](std::string_view text) {
      written += text;
      return true;
    });
  }
  EXPECT_EQ(step, SseStreamWriter::Step::kDone);
  EXPECT_EQ(written, "m:a\nm:b\nm:c\nend:OK\n");
  EXPECT_EQ(writer.WriteNext([](std::string_view) { return true; }), SseStreamWriter::Step::kDone);
}

TEST(SseStreamWriterTest, FailedWriteCancelsTheGeneration) {
  std::atomic<bool> saw_false{false};
  {
    auto stream = std::make_shared<GenerationStream>([&](const MessageCallback& on_message) {
      while (on_message(Message("x"))) std::this_thread::sleep_for(milliseconds(1));
      saw_false.store(true);
      return CancelledError("cancelled");
    });
    SseStreamWriter writer(stream, std::make_unique<TextEncoder>(), First(*stream),
                           milliseconds(10000));
    EXPECT_EQ(writer.WriteNext([](std::string_view) { return false; }),
              SseStreamWriter::Step::kClientGone);
    EXPECT_TRUE(stream->cancelled());
  }  // the last owner of the stream joins the call
  EXPECT_TRUE(saw_false.load());
}

TEST(SseStreamWriterTest, IdleStreamGetsKeepAliveComments) {
  std::atomic<bool> release{false};
  auto stream = std::make_shared<GenerationStream>([&](const MessageCallback& on_message) {
    on_message(Message("a"));
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    return Status::Ok();
  });
  SseStreamWriter writer(stream, std::make_unique<TextEncoder>(), First(*stream), milliseconds(1));
  std::string written;
  auto append = [&](std::string_view text) {
    written += text;
    return true;
  };
  EXPECT_EQ(writer.WriteNext(append), SseStreamWriter::Step::kMore);
  EXPECT_EQ(written, "m:a\n");
  EXPECT_EQ(writer.WriteNext(append), SseStreamWriter::Step::kMore);
  EXPECT_EQ(written, "m:a\n: keep-alive\n\n");
  release.store(true);
}

// A long prefill reports each chunk as a progress message. The writer turns
// each into a keep-alive (its writes are what notice a client that left),
// spaced by at least kProgressWriteInterval, though the keep-alive interval
// is long; a client gone makes the next one fail and cancels the prefill.
TEST(SseStreamWriterTest, PrefillChunksAreAnsweredWithKeepAlives) {
  std::atomic<bool> saw_false{false};
  auto stream = std::make_shared<GenerationStream>([&](const MessageCallback& on_message) {
    v1::GenerateTextResponse progress;
    progress.set_worker("w0");
    while (on_message(progress)) std::this_thread::sleep_for(milliseconds(20));
    saw_false.store(true);
    return CancelledError("cancelled");
  });
  GenerationStream::Batch first;
  while (first.progress == 0) first = stream->Next(milliseconds(1000));
  SseStreamWriter writer(stream, std::make_unique<TextEncoder>(), std::move(first),
                         milliseconds(60000));
  int keepalives = 0;
  const auto start = std::chrono::steady_clock::now();
  while (keepalives < 3) {
    ASSERT_EQ(writer.WriteNext([&](std::string_view text) {
      EXPECT_EQ(text, ": keep-alive\n\n");
      ++keepalives;
      return true;
    }),
              SseStreamWriter::Step::kMore);
    ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
  // Three, the first one interval after the writer began.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3 * SseStreamWriter::kProgressWriteInterval);
  // The client leaves: the next chunk's write fails and stops the prefill.
  SseStreamWriter::Step step = SseStreamWriter::Step::kMore;
  while (step == SseStreamWriter::Step::kMore) {
    step = writer.WriteNext([](std::string_view) { return false; });
  }
  EXPECT_EQ(step, SseStreamWriter::Step::kClientGone);
  const auto gone = std::chrono::steady_clock::now();
  while (!saw_false.load() && std::chrono::steady_clock::now() - gone < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(saw_false.load()) << "the prefill went on after the client left";
}

}  // namespace
}  // namespace kvmesh::router::gateway
