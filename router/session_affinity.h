// SessionAffinity: which worker each session (GenerationOptions.session_id)
// was last sent to, so its next request goes there too while that worker
// holds the session's context (StickToSession). For `presume_window` after
// a request the worker is presumed to hold its prompt even before the prefix
// index has heard of the pages (the hint enters the decision as that
// prefix, so the policy's load guard still moves a session off an
// overloaded worker); after that the index says. Bounded: the least
// recently used sessions are forgotten first, and any after `ttl`.
// Thread-safe.
//
// It also sums, per worker, the context each live session last sent there
// keeps in the worker's cache (SessionTokens): what its requests there
// added to the cache, so a prefix many sessions share counts once, for the
// session that brought it. A worker whose live sessions already fill its
// cache evicts one of them for every token a new session brings, which the
// prefix policy prices. It also counts each worker's live sessions and
// how many tokens a live session adds per turn (what its prompt grew by at
// its latest request), so the policy can price the turns a worker's live
// sessions will bring it.
//
// No request says that a session has ended, so a session is live until it
// has been idle for a number of its own mean gaps between requests (at
// least `min_live_window`, at most `live_window`). An agent whose turns come
// 5 s apart has ended after some silent seconds; one that runs minute-long
// tools has not. With one window for all, sessions of a few seconds that had
// ended still filled the sums for minutes, every cache looked full of live
// sessions, and the policy stopped telling caches apart (docs/benchmarks.md,
// "Agent sessions in the open loop").
//
// How many gaps is learned from the sessions that ended: a window of x gaps
// keeps each ended session counted for x gaps after its last request, and
// drops a live one whose pause runs past x gaps for the rest of it. With
// pauses exponential around a session's mean gap g and M requests per
// session (M - 1 pauses before each end), the two balance, so the live
// count is right on average, where x = (M - 1) e^-x: 1.5 gaps for sessions
// of 8 requests, 2.2 for 20, 0.57 for 2 (LiveGaps; within [0.5,
// `live_gaps`]). Until `kLearnAfter` sessions have ended it is `live_gaps`
// (4). A fixed 4 gaps counted every ended session of 8 requests for half its
// life again: the router saw 20 live sessions where 12 were, their contexts
// overfilled the caches, and the policy's live-session load term stayed
// off (docs/benchmarks.md, "The live window learned"). A session that comes
// back after its window had not ended: its end is taken back. A session
// without a gap of its own yet gets the mean gap of the sessions seen (an
// average over their latest gaps), or `live_window` before there is one.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "router/policies/policy.h"

namespace kvmesh::router {

class SessionAffinity {
 public:
  using Clock = std::chrono::steady_clock;

  struct Hint {
    std::string worker_id;
    int32_t prompt_tokens = 0;  // of the session's last request there
    int slot = -1;              // its slot then (the id decides)
    // Record: the tokens this request adds to the worker's cache (its prompt
    // less what the worker held of it). Find: the session's whole context
    // there, those summed over its requests since it came to the worker.
    int64_t context_tokens = 0;
    // Find: whether that request was sent within `presume_window`, so the
    // worker's KV events may not yet have told the index of its blocks and
    // the worker is presumed to hold its prompt. After that the index says
    // what the worker still holds (a presumption kept for good held
    // sessions on workers that had evicted their context).
    bool recent = true;
  };

  explicit SessionAffinity(
      size_t max_sessions = 100000, std::chrono::seconds ttl = std::chrono::hours(1),
      std::chrono::seconds live_window = std::chrono::minutes(5),
      std::chrono::seconds presume_window = std::chrono::seconds(2), double live_gaps = 4,
      std::chrono::milliseconds min_live_window = std::chrono::milliseconds(500))
      : max_sessions_(max_sessions),
        ttl_(ttl),
        live_window_(live_window),
        presume_window_(presume_window),
        live_gaps_(live_gaps),
        min_live_window_(min_live_window) {}

  // Decisions for one session are serialized: Lock(session) before looking
  // up the hint and choosing, so same-session requests that arrive together
  // land together (sessions share one of 64 locks by hash).
  std::unique_lock<std::mutex> Lock(const std::string& session) {
    return std::unique_lock<std::mutex>(decide_mu_[std::hash<std::string>{}(session) % 64]);
  }

  // The table's key for a client's session name of a model: scoped by model,
  // and long names hashed (a key costs at most ~300 bytes).
  static std::string Key(const std::string& model, const std::string& session);

  std::optional<Hint> Find(const std::string& session, Clock::time_point now = Clock::now());
  void Record(const std::string& session, Hint hint, Clock::time_point now = Clock::now());
  size_t size() const;
  // The mean context of the live sessions on their workers (0: none live).
  int64_t MeanLiveTokens(Clock::time_point now = Clock::now());

  // The live window in gaps that balances the ended sessions still counted
  // against the live ones dropped: x = continued e^-x, where `continued`
  // is the requests that follow a session's request before its end
  // (M - 1), held to [0.5, most].
  static double LiveGaps(double continued, double most);
  // The window in gaps now (live_gaps until enough sessions have ended).
  double live_gaps_now() const;

  struct LiveSummary {
    int64_t mean_tokens = 0;  // MeanLiveTokens
    // The mean tokens a live session's prompt grew by at its latest
    // request (0: no live session has sent a second request yet).
    int64_t mean_turn_tokens = 0;
  };

  // Sets each view's session_tokens and live_sessions: the live sessions'
  // context on its worker and their number, less the asking session's own
  // (`hint`, which it would leave). Sessions past the window leave the sums
  // first. Returns the fleet's means as of the same moment.
  LiveSummary SessionTokens(std::span<WorkerView> views, const std::optional<Hint>& hint,
                            Clock::time_point now = Clock::now());

 private:
  struct Entry {
    Hint hint;
    Clock::time_point used;
    bool live = true;                      // in live_ (counted) or idle_
    std::list<std::string>::iterator lru;  // in live_ or idle_
    double mean_gap_s = -1;                // between its requests; -1 until a second
    Clock::time_point live_until;          // leaves the live sums then, unless used
    Clock::time_point queued_until;        // its earliest entry in ends_
    // What its prompt grew by at its latest request (-1: none yet).
    int64_t turn_tokens = -1;
    int64_t requests = 1;  // counted in ended_requests_ while it is idle (not live)
  };
  struct WorkerLive {
    int64_t tokens = 0;
    int64_t sessions = 0;
  };

  // The session's live_until after a request at `now`.
  Clock::time_point LiveUntil(const Entry& e, Clock::time_point now) const;
  // Queues the entry's live_until in ends_ unless an entry as early is queued.
  void Queue(const std::string& session, Entry& e);
  // Moves sessions whose live_until has passed out of the live sums.
  void Expire(Clock::time_point now);
  void Count(const Entry& e, int64_t sign);
  // A session went idle (ended, as far as is known), or came back.
  void Ended(const Entry& e);
  void Returned(const Entry& e);
  // gaps_ from the ended sessions' mean requests.
  void Relearn();
  // The window in gaps: gaps_ once kLearnAfter sessions have ended, else live_gaps_.
  double Gaps() const { return ended_sessions_ >= kLearnAfter ? gaps_ : live_gaps_; }

  static constexpr int64_t kLearnAfter = 32;  // sessions ended before the window is learned
  static constexpr double kEndedKept = 4096;  // ended sessions the learning remembers
  int64_t MeanLive() const { return live_sessions_ > 0 ? live_total_ / live_sessions_ : 0; }
  void Erase(std::unordered_map<std::string, Entry>::iterator it);

  const size_t max_sessions_;
  const std::chrono::seconds ttl_;
  const std::chrono::seconds live_window_;
  const std::chrono::seconds presume_window_;
  const double live_gaps_;
  const std::chrono::milliseconds min_live_window_;
  std::array<std::mutex, 64> decide_mu_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> sessions_;
  // Most recent first; every live session is more recent than every idle one.
  std::list<std::string> live_;
  std::list<std::string> idle_;
  absl::flat_hash_map<std::string, WorkerLive> live_by_worker_;  // by worker id
  int64_t live_sessions_ = 0, live_total_ = 0;                   // over every worker
  int64_t turn_sessions_ = 0, turn_total_ = 0;  // live sessions with turn_tokens known
  // Sessions ended, less those taken back (halved with the requests
  // whenever past kEndedKept, so the traffic of the last hours counts), and
  // their requests; the window in gaps they give (live_gaps_ until
  // kLearnAfter have ended).
  double ended_sessions_ = 0, ended_requests_ = 0;
  double gaps_ = 0;
  double fleet_gap_s_ = -1;  // the mean of the sessions' latest gaps (-1: none yet)
  // When live sessions end, earliest first. An entry whose time is not its
  // session's queued_until is stale (an earlier one superseded it, or the
  // session was forgotten), and is dropped when it comes up; so every live
  // session has one current entry, no later than its live_until.
  using End = std::pair<Clock::time_point, std::string>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends_;
};

}  // namespace kvmesh::router
