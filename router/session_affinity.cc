#include "router/session_affinity.h"

#include <algorithm>
#include <cmath>

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
    if (e.live) {
      Count(e, -1);
    } else {
      Returned(e);  // it had not ended
    }
    live_.splice(live_.begin(), e.live ? live_ : idle_, e.lru);
    // A turn: what the prompt grew by since the session's last request
    // (not what the worker computed, which under eviction is its history).
    if (hint.prompt_tokens > e.hint.prompt_tokens)
      e.turn_tokens = hint.prompt_tokens - e.hint.prompt_tokens;
    if (e.hint.worker_id == hint.worker_id) hint.context_tokens += e.hint.context_tokens;
    const double gap = std::chrono::duration<double>(now - e.used).count();
    e.mean_gap_s = e.mean_gap_s < 0 ? gap : 0.75 * e.mean_gap_s + 0.25 * gap;
    fleet_gap_s_ = fleet_gap_s_ < 0 ? e.mean_gap_s : 0.98 * fleet_gap_s_ + 0.02 * e.mean_gap_s;
    ++e.requests;
    e.hint = std::move(hint);
    e.used = now;
    e.live = true;
    e.live_until = LiveUntil(e, now);
    Count(e, +1);
    Queue(session, e);
    return;
  }
  live_.push_front(session);
  Entry& e =
      sessions_.emplace(session, Entry{std::move(hint), now, true, live_.begin(), -1, now, {}})
          .first->second;
  e.live_until = LiveUntil(e, now);
  Count(e, +1);
  Queue(session, e);
  while (sessions_.size() > max_sessions_) {
    Erase(sessions_.find(idle_.empty() ? live_.back() : idle_.back()));
  }
}

SessionAffinity::Clock::time_point SessionAffinity::LiveUntil(const Entry& e,
                                                              Clock::time_point now) const {
  const double gap = e.mean_gap_s >= 0 ? e.mean_gap_s : fleet_gap_s_;
  if (gap < 0) return now + live_window_;
  const double window =
      std::clamp(Gaps() * gap, std::chrono::duration<double>(min_live_window_).count(),
                 std::chrono::duration<double>(live_window_).count());
  return now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(window));
}

double SessionAffinity::LiveGaps(double continued, double most) {
  // Newton on f(x) = x - c e^-x: increasing and concave, one root in [0, c],
  // reached from below after the first step.
  const double c = std::max(0.0, continued);
  double x = std::min(1.0, c);
  for (int i = 0; i < 32; ++i) {
    const double ce = c * std::exp(-x);
    const double step = (x - ce) / (1 + ce);
    x -= step;
    if (std::abs(step) < 1e-9) break;
  }
  return std::clamp(x, std::min(0.5, most), most);
}

double SessionAffinity::live_gaps_now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Gaps();
}

void SessionAffinity::Relearn() {
  if (ended_sessions_ > 0) gaps_ = LiveGaps(ended_requests_ / ended_sessions_ - 1, live_gaps_);
}

void SessionAffinity::Ended(const Entry& e) {
  if (ended_sessions_ >= kEndedKept) {
    ended_sessions_ /= 2;
    ended_requests_ /= 2;
  }
  ended_sessions_ += 1;
  ended_requests_ += static_cast<double>(e.requests);
  Relearn();
}

void SessionAffinity::Returned(const Entry& e) {
  ended_sessions_ = std::max(0.0, ended_sessions_ - 1);
  ended_requests_ = std::max(0.0, ended_requests_ - static_cast<double>(e.requests));
  Relearn();
}

void SessionAffinity::Queue(const std::string& session, Entry& e) {
  if (e.queued_until != Clock::time_point() && e.queued_until <= e.live_until) return;
  e.queued_until = e.live_until;
  ends_.emplace(e.live_until, session);
}

void SessionAffinity::Expire(Clock::time_point now) {
  while (!ends_.empty() && ends_.top().first < now) {
    const auto [when, session] = ends_.top();
    ends_.pop();
    auto it = sessions_.find(session);
    if (it == sessions_.end() || it->second.queued_until != when) continue;  // stale
    Entry& e = it->second;
    e.queued_until = Clock::time_point();
    if (!e.live) continue;
    if (e.live_until >= now) {  // used since: queued again for its new end
      Queue(session, e);
      continue;
    }
    Count(e, -1);
    e.live = false;
    Ended(e);
    idle_.splice(idle_.begin(), live_, e.lru);  // the newest idle
  }
}

int64_t SessionAffinity::MeanLiveTokens(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  return MeanLive();
}

void SessionAffinity::Count(const Entry& e, int64_t sign) {
  live_sessions_ += sign;
  live_total_ += sign * e.hint.context_tokens;
  if (e.turn_tokens >= 0) {
    turn_sessions_ += sign;
    turn_total_ += sign * e.turn_tokens;
  }
  auto it = live_by_worker_.try_emplace(e.hint.worker_id).first;
  it->second.tokens += sign * e.hint.context_tokens;
  it->second.sessions += sign;
  if (it->second.sessions == 0) live_by_worker_.erase(it);
}

void SessionAffinity::Erase(std::unordered_map<std::string, Entry>::iterator it) {
  if (it->second.live) Count(it->second, -1);
  (it->second.live ? live_ : idle_).erase(it->second.lru);
  sessions_.erase(it);
}

SessionAffinity::LiveSummary SessionAffinity::SessionTokens(std::span<WorkerView> views,
                                                            const std::optional<Hint>& hint,
                                                            Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  if (live_by_worker_.empty()) return {};
  for (WorkerView& v : views) {
    const auto it = live_by_worker_.find(absl::string_view(v.id.data(), v.id.size()));
    if (it == live_by_worker_.end()) continue;
    v.session_tokens = it->second.tokens;
    v.live_sessions = it->second.sessions;
    if (hint && hint->worker_id == v.id) {
      v.session_tokens = std::max<int64_t>(0, v.session_tokens - hint->context_tokens);
      v.live_sessions = std::max<int64_t>(0, v.live_sessions - 1);
    }
  }
  return {MeanLive(), turn_sessions_ > 0 ? turn_total_ / turn_sessions_ : 0};
}

size_t SessionAffinity::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace kvmesh::router
