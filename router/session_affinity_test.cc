#include "router/session_affinity.h"

#include <gtest/gtest.h>

namespace kvmesh::router {
namespace {

using namespace std::chrono_literals;

TEST(SessionAffinityTest, RemembersTheLastWorkerOfASession) {
  SessionAffinity sessions;
  const auto t0 = SessionAffinity::Clock::now();
  EXPECT_FALSE(sessions.Find("s1", t0).has_value());
  sessions.Record("s1", {"worker-a", 1200}, t0);
  sessions.Record("s1", {"worker-b", 1500}, t0 + 1s);
  auto hint = sessions.Find("s1", t0 + 2s);
  ASSERT_TRUE(hint.has_value());
  EXPECT_EQ(hint->worker_id, "worker-b");
  EXPECT_EQ(hint->prompt_tokens, 1500);
  EXPECT_FALSE(sessions.Find("s2", t0 + 2s).has_value());
}

TEST(SessionAffinityTest, ForgetsAfterTheTtl) {
  SessionAffinity sessions(10, 60s);
  const auto t0 = SessionAffinity::Clock::now();
  sessions.Record("s1", {"worker-a", 10}, t0);
  EXPECT_TRUE(sessions.Find("s1", t0 + 59s).has_value());
  EXPECT_FALSE(sessions.Find("s1", t0 + 61s).has_value());
  EXPECT_EQ(sessions.size(), 0u);
}

TEST(SessionAffinityTest, ForgetsTheLeastRecentlyUsedBeyondTheBound) {
  SessionAffinity sessions(2, 3600s);
  const auto t0 = SessionAffinity::Clock::now();
  sessions.Record("s1", {"a", 1}, t0);
  sessions.Record("s2", {"b", 1}, t0);
  sessions.Record("s1", {"a", 2}, t0);  // s1 is now the most recent
  sessions.Record("s3", {"c", 1}, t0);
  EXPECT_EQ(sessions.size(), 2u);
  EXPECT_TRUE(sessions.Find("s1", t0).has_value());
  EXPECT_FALSE(sessions.Find("s2", t0).has_value());
  EXPECT_TRUE(sessions.Find("s3", t0).has_value());
}

}  // namespace
}  // namespace kvmesh::router
