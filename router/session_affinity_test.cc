#include "router/session_affinity.h"

#include <gtest/gtest.h>

#include <cmath>

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

// The last prompt is presumed held only while the worker's events may not
// have reached the index yet; later the index says what is left of it.
TEST(SessionAffinityTest, PresumesTheLastPromptOnlyUntilEventsHaveArrived) {
  SessionAffinity sessions(10, 3600s, 300s, 2s);
  const auto t0 = SessionAffinity::Clock::now();
  sessions.Record("s1", {"worker-a", 1500}, t0);
  EXPECT_TRUE(sessions.Find("s1", t0 + 2s)->recent);
  const auto later = sessions.Find("s1", t0 + 3s);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->worker_id, "worker-a");
  EXPECT_EQ(later->prompt_tokens, 1500);
  EXPECT_FALSE(later->recent);
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

// The live sessions' context, summed by the worker each was last sent to:
// what each session's requests there added to its cache (a session that
// stays adds to its context; one that moves starts again there), one idle
// past the window leaves the sum (and comes back when used again), and the
// asking session's own context is left out.
TEST(SessionAffinityTest, SumsTheLiveSessionsOfEachWorker) {
  SessionAffinity sessions(100, 3600s, 60s);
  const auto t0 = SessionAffinity::Clock::now();
  sessions.Record("s1", {"a", 1000, 0, 1000}, t0);       // brought a 900-token shared prefix
  sessions.Record("s2", {"a", 1000, 0, 100}, t0 + 10s);  // found it there
  sessions.Record("s3", {"b", 300, 1, 300}, t0 + 20s);
  auto tokens = [&](SessionAffinity::Clock::time_point now,
                    const std::optional<SessionAffinity::Hint>& hint = std::nullopt) {
    std::vector<WorkerView> views(3);
    views[0].id = "a";
    views[1].id = "b";
    views[2].id = "c";
    sessions.SessionTokens(views, hint, now);
    return std::vector<int64_t>{views[0].session_tokens, views[1].session_tokens,
                                views[2].session_tokens};
  };
  EXPECT_EQ(tokens(t0 + 20s), (std::vector<int64_t>{1100, 300, 0}));
  sessions.Record("s2", {"a", 1200, 0, 200}, t0 + 25s);  // its next turn, 200 more
  EXPECT_EQ(tokens(t0 + 25s), (std::vector<int64_t>{1300, 300, 0}));
  EXPECT_EQ(sessions.Find("s2", t0 + 25s)->context_tokens, 300);
  sessions.Record("s1", {"b", 1200, 1, 1200}, t0 + 30s);  // s1 moved: all of it again
  EXPECT_EQ(tokens(t0 + 30s), (std::vector<int64_t>{300, 1500, 0}));
  EXPECT_EQ(tokens(t0 + 30s, sessions.Find("s1", t0 + 30s)), (std::vector<int64_t>{300, 300, 0}));
  // At t0 + 81 s, s3 (last used at t0 + 20 s) is idle; at t0 + 86 s, s2
  // (t0 + 25 s) too, though still remembered.
  EXPECT_EQ(tokens(t0 + 81s), (std::vector<int64_t>{300, 1200, 0}));
  EXPECT_EQ(tokens(t0 + 86s), (std::vector<int64_t>{0, 1200, 0}));
  EXPECT_TRUE(sessions.Find("s2", t0 + 86s).has_value());
  sessions.Record("s2", {"a", 1300, 0, 100}, t0 + 90s);  // back, its context kept
  EXPECT_EQ(tokens(t0 + 90s), (std::vector<int64_t>{400, 1200, 0}));
  // Forgotten past the bound or the TTL: gone from the sums as well.
  SessionAffinity small(1, 3600s, 60s);
  small.Record("x", {"a", 10, 0, 10}, t0);
  small.Record("y", {"b", 20, 1, 20}, t0);
  std::vector<WorkerView> views(2);
  views[0].id = "a";
  views[1].id = "b";
  small.SessionTokens(views, std::nullopt, t0);
  EXPECT_EQ(views[0].session_tokens, 0);
  EXPECT_EQ(views[1].session_tokens, 20);
  EXPECT_FALSE(small.Find("y", t0 + 3601s).has_value());
  views[1].session_tokens = 0;
  small.SessionTokens(views, std::nullopt, t0 + 3601s);
  EXPECT_EQ(views[1].session_tokens, 0);
}

// Until sessions have ended to learn from, a session is live until it has
// been idle for four of its own mean gaps between requests, within
// [0.5 s, live_window]; until its second request, for live_window. A session that sends a turn a
// second has ended after a few silent seconds; one that pauses a minute between turns has not.
TEST(SessionAffinityTest, ASessionIsLiveForFourOfItsOwnGaps) {
  SessionAffinity sessions(100, 3600s, 300s);
  const auto t0 = SessionAffinity::Clock::now();
  auto tokens = [&](SessionAffinity::Clock::time_point now) {
    std::vector<WorkerView> views(3);
    views[0].id = "a";
    views[1].id = "b";
    views[2].id = "c";
    sessions.SessionTokens(views, std::nullopt, now);
    return std::vector<int64_t>{views[0].session_tokens, views[1].session_tokens,
                                views[2].session_tokens};
  };
  sessions.Record("fast", {"a", 100, 0, 100}, t0);
  sessions.Record("once", {"c", 50, 0, 50}, t0);  // no gap yet: live until t0 + 300 s
  sessions.Record("burst", {"c", 10, 0, 10}, t0 + 1900ms);
  sessions.Record("burst", {"c", 20, 0, 10}, t0 + 2s);  // 4 x 0.1 s, raised to 0.5 s
  sessions.Record("fast", {"a", 200, 0, 100}, t0 + 1s);
  sessions.Record("fast", {"a", 300, 0, 100}, t0 + 2s);  // gaps of 1 s: live until t0 + 6 s
  EXPECT_EQ(tokens(t0 + 2s), (std::vector<int64_t>{300, 0, 70}));
  EXPECT_EQ(sessions.MeanLiveTokens(t0 + 2s), (300 + 50 + 20) / 3);
  EXPECT_EQ(tokens(t0 + 2400ms), (std::vector<int64_t>{300, 0, 70}));
  EXPECT_EQ(tokens(t0 + 2600ms), (std::vector<int64_t>{300, 0, 50}));  // burst ended at 2.5 s
  EXPECT_EQ(tokens(t0 + 5900ms), (std::vector<int64_t>{300, 0, 50}));
  EXPECT_EQ(tokens(t0 + 6100ms), (std::vector<int64_t>{0, 0, 50}));  // fast ended
  EXPECT_EQ(sessions.MeanLiveTokens(t0 + 6100ms), 50);
  sessions.Record("slow", {"b", 100, 0, 100}, t0 + 10s);
  sessions.Record("slow", {"b", 200, 0, 100}, t0 + 70s);  // a 60 s gap: until t0 + 310 s
  EXPECT_EQ(tokens(t0 + 299s), (std::vector<int64_t>{0, 200, 50}));
  EXPECT_EQ(tokens(t0 + 301s), (std::vector<int64_t>{0, 200, 0}));  // once ended
  EXPECT_EQ(tokens(t0 + 311s), (std::vector<int64_t>{0, 0, 0}));
  // Ended, not forgotten: its next turn brings it back, with what it holds.
  EXPECT_TRUE(sessions.Find("fast", t0 + 311s).has_value());
  sessions.Record("fast", {"a", 400, 0, 100}, t0 + 312s);
  EXPECT_EQ(tokens(t0 + 312s), (std::vector<int64_t>{400, 0, 0}));
  // Its gaps now average 0.75 x 1 s + 0.25 x 310 s: live for 300 s again.
  EXPECT_EQ(tokens(t0 + 611s), (std::vector<int64_t>{400, 0, 0}));
  EXPECT_EQ(tokens(t0 + 613s), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(sessions.MeanLiveTokens(t0 + 613s), 0);  // none live
}

// Each worker's live sessions are counted, and a turn is what a session's
// prompt grew by since its previous request, wherever that went: not what
// the worker computed, which for a first request is the prefix it brought
// and for a move or a cache that evicted it is the session's history.
TEST(SessionAffinityTest, CountsLiveSessionsAndTheTokensOfATurn) {
  SessionAffinity sessions(100, 3600s, 300s);
  const auto t0 = SessionAffinity::Clock::now();
  std::vector<WorkerView> views(2);
  views[0].id = "a";
  views[1].id = "b";
  EXPECT_EQ(sessions.SessionTokens(views, std::nullopt, t0).mean_turn_tokens, 0);
  sessions.Record("s1", {"a", 1000, 0, 1000}, t0);  // brought the prefix
  sessions.Record("s2", {"a", 600, 0, 200}, t0);
  sessions.Record("s3", {"b", 600, 0, 200}, t0);
  EXPECT_EQ(sessions.SessionTokens(views, std::nullopt, t0).mean_turn_tokens, 0);  // no turn yet
  EXPECT_EQ(views[0].live_sessions, 2);
  EXPECT_EQ(views[1].live_sessions, 1);
  sessions.Record("s1", {"a", 1150, 0, 150}, t0 + 1s);
  sessions.Record("s2", {"a", 850, 0, 850}, t0 + 1s);    // evicted: computed its history again
  sessions.Record("s3", {"a", 800, 0, 800}, t0 + 1s);    // moved: its history too
  views[1].live_sessions = views[1].session_tokens = 0;  // as a fresh view
  const SessionAffinity::LiveSummary live = sessions.SessionTokens(views, std::nullopt, t0 + 1s);
  EXPECT_EQ(live.mean_turn_tokens, (150 + 250 + 200) / 3);
  EXPECT_EQ(live.mean_tokens, (1150 + 1050 + 800) / 3);
  EXPECT_EQ(views[0].live_sessions, 3);
  EXPECT_EQ(views[1].live_sessions, 0);
  // The asking session is left out of its own worker's count.
  const auto hint = sessions.Find("s2", t0 + 1s);
  ASSERT_TRUE(hint.has_value());
  sessions.SessionTokens(views, hint, t0 + 1s);
  EXPECT_EQ(views[0].live_sessions, 2);
  EXPECT_EQ(views[0].session_tokens, 1150 + 800);
}

// The window in gaps balances the ended sessions still counted against the
// live ones dropped in a long pause: x = (M - 1) e^-x for M requests per
// session.
TEST(SessionAffinityTest, TheLiveWindowBalancesEndedAgainstPausedSessions) {
  EXPECT_NEAR(SessionAffinity::LiveGaps(7, 4), 1.5245, 1e-3);   // 8 requests
  EXPECT_NEAR(SessionAffinity::LiveGaps(19, 4), 2.1698, 1e-3);  // 20
  EXPECT_NEAR(SessionAffinity::LiveGaps(1, 4), 0.5671, 1e-3);   // 2
  EXPECT_EQ(SessionAffinity::LiveGaps(0, 4), 0.5);              // one: held to 0.5
  EXPECT_EQ(SessionAffinity::LiveGaps(1e6, 4), 4);              // held to the most
  for (const double c : {1.0, 3.0, 7.0, 50.0}) {
    const double x = SessionAffinity::LiveGaps(c, 100);
    EXPECT_NEAR(x, c * std::exp(-x), 1e-6) << c;
  }
}

// Sessions of 8 requests a second apart: once 32 have ended, a session is
// live for 1.52 of its gaps after its last request, not 4, and one without a
// gap yet for 1.52 of the sessions' mean gap, not live_window. A session
// that pauses past its window and comes back had not ended: its end is taken
// back, so sessions that pause mid-way do not teach a shorter window.
TEST(SessionAffinityTest, LearnsTheLiveWindowFromTheSessionsThatEnded) {
  SessionAffinity sessions(1000, 3600s, 300s);
  const auto t0 = SessionAffinity::Clock::now();
  auto live = [&](SessionAffinity::Clock::time_point now) {
    std::vector<WorkerView> views(1);
    views[0].id = "a";
    sessions.SessionTokens(views, std::nullopt, now);
    return views[0].live_sessions;
  };
  // Session k at t0 + 100 s × k, requests 1 s apart (0, 1, ..., 7 s),
  // pausing `pause` after its fourth.
  auto session = [&](const std::string& name, std::chrono::seconds start,
                     std::chrono::seconds pause) {
    for (int i = 0; i < 8; ++i) {
      const auto at = t0 + start + std::chrono::seconds(i) + (i >= 4 ? pause : 0s);
      sessions.Record(name, {"a", 100 * (i + 1), 0, 100}, at);
    }
  };
  for (int k = 0; k < 32; ++k) session("s" + std::to_string(k), 100s * k, 0s);
  EXPECT_EQ(sessions.live_gaps_now(), 4);  // the 32nd has not ended yet
  EXPECT_EQ(live(t0 + 3100s + 7s + 3900ms), 1);
  EXPECT_EQ(live(t0 + 3100s + 7s + 4100ms), 0);
  EXPECT_NEAR(sessions.live_gaps_now(), 1.5245, 1e-3);
  session("new", 3200s, 0s);  // last request at 3207 s
  EXPECT_EQ(live(t0 + 3207s + 1400ms), 1);
  EXPECT_EQ(live(t0 + 3207s + 1650ms), 0);
  sessions.Record("first", {"a", 100, 0, 100}, t0 + 3300s);  // the sessions' gap: 1 s
  EXPECT_EQ(live(t0 + 3300s + 1400ms), 1);
  EXPECT_EQ(live(t0 + 3300s + 1650ms), 0);
  // 32 sessions that pause 100 s after their fourth request, past their
  // window: counted as ended then, taken back when they come back. Counted
  // as 64 sessions of 4 requests they would teach 1.25 gaps.
  for (int k = 0; k < 32; ++k) session("p" + std::to_string(k), 3400s + 1000s * k, 100s);
  EXPECT_EQ(live(t0 + 40000s), 0);  // every one ended
  EXPECT_NEAR(sessions.live_gaps_now(), 1.5245, 0.02);
}

// A session taken back (it came back after its window) has not ended: it
// does not count towards the kLearnAfter ended sessions that start the
// learning, or 16 sessions that each paused once would count as 32.
TEST(SessionAffinityTest, ASessionTakenBackDoesNotCountAsEnded) {
  SessionAffinity sessions(1000, 3600s, 300s);
  const auto t0 = SessionAffinity::Clock::now();
  for (int k = 0; k < 20; ++k) {
    for (int i = 0; i < 8; ++i) {  // 1 s apart, 100 s of pause after the fourth
      const auto at = t0 + 1000s * k + std::chrono::seconds(i) + (i >= 4 ? 100s : 0s);
      sessions.Record("s" + std::to_string(k), {"a", 100 * (i + 1), 0, 100}, at);
    }
  }
  std::vector<WorkerView> views(1);
  views[0].id = "a";
  sessions.SessionTokens(views, std::nullopt, t0 + 30000s);
  EXPECT_EQ(views[0].live_sessions, 0);    // all 20 ended (and paused once each)
  EXPECT_EQ(sessions.live_gaps_now(), 4);  // 20 ended, not 40: not learned yet
}

// A window never outlasts live_window, however long the session's gaps.
TEST(SessionAffinityTest, NoSessionIsLivePastTheLongestWindow) {
  SessionAffinity sessions(100, 3600s, 60s);
  const auto t0 = SessionAffinity::Clock::now();
  sessions.Record("s", {"a", 10, 0, 10}, t0);
  sessions.Record("s", {"a", 20, 0, 10}, t0 + 50s);  // 4 × 50 s, held to 60 s
  std::vector<WorkerView> views(1);
  views[0].id = "a";
  sessions.SessionTokens(views, std::nullopt, t0 + 110s);
  EXPECT_EQ(views[0].session_tokens, 20);
  views[0].session_tokens = 0;
  sessions.SessionTokens(views, std::nullopt, t0 + 111s);
  EXPECT_EQ(views[0].session_tokens, 0);
}

}  // namespace
}  // namespace kvmesh::router
