#include "router/stream_watchdog.h"

#include <gtest/gtest.h>

#include <thread>

namespace kvmesh::router {
namespace {

using std::chrono::milliseconds;

TEST(StreamWatchdogTest, CancelsOnlyStreamsThatStopMoving) {
  StreamWatchdog watchdog(milliseconds(150), milliseconds(5));
  grpc::ClientContext moving_context, idle_context;
  auto moving = watchdog.Watch(&moving_context);
  auto idle = watchdog.Watch(&idle_context);
  // Far longer than the timeout in all, but never idle for long.
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    moving->Touch();
  }
  EXPECT_FALSE(moving->timed_out());
  EXPECT_TRUE(idle->timed_out());
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_TRUE(moving->timed_out());
}

TEST(StreamWatchdogTest, AGuardUnwatchesBeforeItsContextGoes) {
  StreamWatchdog watchdog(milliseconds(1), milliseconds(1));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext context;
    auto guard = watchdog.Watch(&context);
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 5)));
  }  // under ASan a cancel of a destroyed context would be reported here
}

}  // namespace
}  // namespace kvmesh::router
