#include "router/session_affinity.h"

namespace kvmesh::router {

std::string SessionAffinity::Key(const std::string& model, const std::string& session) {
  if (session.size() <= 256) return model + '\n' + session;
  return model + "\n#" + std::to_string(std::hash<std::string>{}(session)) + ":" +
         std::to_string(session.size());
}

std::optional<SessionAffinity::Hint> SessionAffinity::Find(const std::string& session,
                                                           Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.used > ttl_) {
    lru_.erase(it->second.lru);
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second.hint;
}

void SessionAffinity::Record(const std::string& session, Hint hint, Clock::time_point now) {
  if (max_sessions_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    it->second.hint = std::move(hint);
    it->second.used = now;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  lru_.push_front(session);
  sessions_.emplace(session, Entry{std::move(hint), now, lru_.begin()});
  while (sessions_.size() > max_sessions_) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
}

size_t SessionAffinity::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace kvmesh::router
