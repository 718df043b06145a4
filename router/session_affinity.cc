#include "router/session_affinity.h"

#include <algorithm>

namespace kvmesh::router {

std::string SessionAffinity::Key(const std::string& model, const std::string& session) {
  if (session.size() <= 256) return model + '\n' + session;
  return model + "\n#" + std::to_string(std::hash<std::string>{}(session)) + ":" +
         std::to_string(session.size());
}

std::optional<SessionAffinity::Hint> SessionAffinity::Find(const std::string& session,
                                                           Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.used > ttl_) {
    Erase(it);
    return std::nullopt;
  }
  Hint hint = it->second.hint;
  hint.recent = now - it->second.used <= presume_window_;
  return hint;
}

void SessionAffinity::Record(const std::string& session, Hint hint, Clock::time_point now) {
  if (max_sessions_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    Entry& e = it->second;
    if (e.live) Count(e, -1);
    live_.splice(live_.begin(), e.live ? live_ : idle_, e.lru);
    if (e.hint.worker_id == hint.worker_id) hint.context_tokens += e.hint.context_tokens;
    e.hint = std::move(hint);
    e.used = now;
    e.live = true;
    Count(e, +1);
    return;
  }
  live_.push_front(session);
  const Entry& e =
      sessions_.emplace(session, Entry{std::move(hint), now, true, live_.begin()}).first->second;
  Count(e, +1);
  while (sessions_.size() > max_sessions_) {
    Erase(sessions_.find(idle_.empty() ? live_.back() : idle_.back()));
  }
}

void SessionAffinity::Expire(Clock::time_point now) {
  while (!live_.empty()) {
    auto it = sessions_.find(live_.back());
    if (now - it->second.used <= live_window_) break;
    Count(it->second, -1);
    it->second.live = false;
    idle_.splice(idle_.begin(), live_, it->second.lru);  // the newest idle
  }
}

void SessionAffinity::Count(const Entry& e, int64_t sign) {
  auto it = live_tokens_.try_emplace(e.hint.worker_id, 0).first;
  it->second += sign * e.hint.context_tokens;
  if (it->second == 0) live_tokens_.erase(it);
}

void SessionAffinity::Erase(std::unordered_map<std::string, Entry>::iterator it) {
  if (it->second.live) Count(it->second, -1);
  (it->second.live ? live_ : idle_).erase(it->second.lru);
  sessions_.erase(it);
}

void SessionAffinity::SessionTokens(std::span<WorkerView> views, const std::optional<Hint>& hint,
                                    Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  if (live_tokens_.empty()) return;
  for (WorkerView& v : views) {
    const auto it = live_tokens_.find(absl::string_view(v.id.data(), v.id.size()));
    if (it == live_tokens_.end()) continue;
    v.session_tokens = it->second;
    if (hint && hint->worker_id == v.id) {
      v.session_tokens = std::max<int64_t>(0, v.session_tokens - hint->context_tokens);
    }
  }
}

size_t SessionAffinity::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace kvmesh::router
