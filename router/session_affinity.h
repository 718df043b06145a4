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
// It also sums, per worker, the context each session last sent there and
// used within `live_window` keeps in the worker's cache (SessionTokens):
// what its requests there added to the cache, so a prefix many sessions
// share counts once, for the session that brought it. A worker whose live
// sessions already fill its cache evicts one of them for every token a new
// session brings, which the prefix policy prices.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

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

  explicit SessionAffinity(size_t max_sessions = 100000,
                           std::chrono::seconds ttl = std::chrono::hours(1),
                           std::chrono::seconds live_window = std::chrono::minutes(5),
                           std::chrono::seconds presume_window = std::chrono::seconds(2))
      : max_sessions_(max_sessions),
        ttl_(ttl),
        live_window_(live_window),
        presume_window_(presume_window) {}

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

  // Sets each view's session_tokens: the live sessions' context on its
  // worker, less the asking session's own (`hint`, which it would leave).
  // Sessions past the window leave the sums first.
  void SessionTokens(std::span<WorkerView> views, const std::optional<Hint>& hint,
                     Clock::time_point now = Clock::now());

 private:
  struct Entry {
    Hint hint;
    Clock::time_point used;
    bool live = true;                      // in live_ (counted) or idle_
    std::list<std::string>::iterator lru;  // in live_ or idle_
  };

  // Moves sessions unused for live_window_ out of the live sums.
  void Expire(Clock::time_point now);
  void Count(const Entry& e, int64_t sign);
  void Erase(std::unordered_map<std::string, Entry>::iterator it);

  const size_t max_sessions_;
  const std::chrono::seconds ttl_;
  const std::chrono::seconds live_window_;
  const std::chrono::seconds presume_window_;
  std::array<std::mutex, 64> decide_mu_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> sessions_;
  // Most recent first; every live session is more recent than every idle one.
  std::list<std::string> live_;
  std::list<std::string> idle_;
  absl::flat_hash_map<std::string, int64_t> live_tokens_;  // by worker id
};

}  // namespace kvmesh::router
