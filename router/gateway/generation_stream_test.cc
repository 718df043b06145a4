#include "router/gateway/generation_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kvmesh::router::gateway {
namespace {

using std::chrono::milliseconds;

v1::GenerateTextResponse Message(const std::string& text) {
  v1::GenerateTextResponse message;
  message.set_text(text);
  return message;
}

// Collects every batch until the call finishes.
std::string Drain(GenerationStream& stream, Status* status) {
  std::string text;
  while (true) {
    GenerationStream::Batch batch = stream.Next(milliseconds(1000));
    for (const auto& message : batch.messages) text += message.text() + "|";
    if (batch.finished) {
      *status = batch.status;
      return text;
    }
  }
}

TEST(GenerationStreamTest, DeliversMessagesInOrderThenStatus) {
  GenerationStream stream([](const MessageCallback& on_message) {
    for (const char* piece : {"a", "b", "c"}) {
      if (!on_message(Message(piece))) return CancelledError("client went away");
    }
    return Status::Ok();
  });
  Status status = InternalError("not set");
  EXPECT_EQ(Drain(stream, &status), "a|b|c|");
  EXPECT_TRUE(status.ok());
  // Later calls keep reporting the end.
  GenerationStream::Batch again = stream.Next(milliseconds(0));
  EXPECT_TRUE(again.finished);
  EXPECT_TRUE(again.messages.empty());
}

TEST(GenerationStreamTest, ReportsAnErrorAfterMessages) {
  GenerationStream stream([](const MessageCallback& on_message) {
    on_message(Message("a"));
    return UnavailableError("worker lost");
  });
  Status status;
  EXPECT_EQ(Drain(stream, &status), "a|");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "worker lost");
}

TEST(GenerationStreamTest, NextTimesOutWithNothing) {
  std::atomic<bool> release{false};
  GenerationStream stream([&release](const MessageCallback&) {
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    return Status::Ok();
  });
  GenerationStream::Batch batch = stream.Next(milliseconds(20));
  EXPECT_TRUE(batch.messages.empty());
  EXPECT_FALSE(batch.finished);
  release.store(true);
}

// Progress messages (a prefill chunk done) are counted, not queued: they wake
// the reader, who may write a keep-alive to learn whether its client is
// still there.
TEST(GenerationStreamTest, CountsProgressMessagesWithoutQueueingThem) {
  std::atomic<bool> release{false};
  GenerationStream stream([&release](const MessageCallback& on_message) {
    v1::GenerateTextResponse progress;
    progress.set_worker("w7");
    on_message(progress);
    on_message(progress);
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    on_message(Message("a"));
    return Status::Ok();
  });
  GenerationStream::Batch batch;
  int progress = 0;
  std::string worker;
  while (progress < 2) {
    batch = stream.Next(milliseconds(1000));
    EXPECT_TRUE(batch.messages.empty());
    if (worker.empty()) worker = batch.progress_worker;
    progress += batch.progress;
  }
  EXPECT_EQ(progress, 2);
  EXPECT_EQ(worker, "w7");
  release.store(true);
  Status status;
  EXPECT_EQ(Drain(stream, &status), "a|");
  EXPECT_TRUE(status.ok());
}

TEST(GenerationStreamTest, CancelMakesTheCallbackReturnFalse) {
  std::atomic<int> sent{0};
  Status core_status;
  {
    GenerationStream stream([&](const MessageCallback& on_message) {
      while (on_message(Message("x"))) {
        ++sent;
        std::this_thread::sleep_for(milliseconds(1));
      }
      return CancelledError("cancelled");
    });
    stream.Next(milliseconds(1000));
    stream.Cancel();
    EXPECT_TRUE(stream.cancelled());
    Status status;
    Drain(stream, &status);
    EXPECT_EQ(status.code(), StatusCode::kCancelled);
  }
  // The destructor joined the thread: no more messages after it.
  int after = sent.load();
  std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(sent.load(), after);
}

TEST(GenerationStreamTest, DestructorCancelsARunningCall) {
  std::atomic<bool> saw_false{false};
  {
    GenerationStream stream([&](const MessageCallback& on_message) {
      while (on_message(Message("x"))) std::this_thread::sleep_for(milliseconds(1));
      saw_false.store(true);
      return CancelledError("cancelled");
    });
    stream.Next(milliseconds(1000));
  }
  EXPECT_TRUE(saw_false.load());
}

}  // namespace
}  // namespace kvmesh::router::gateway
