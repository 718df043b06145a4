#include "router/registry.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <set>

#include "common/log.h"
#include "common/tokenizer_spec.h"

namespace kvmesh::router {
namespace {

StatusOr<std::vector<std::string>> ResolveWithGetaddrinfo(const std::string& host,
                                                          const std::string& port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return UnavailableError("DNS lookup of " + host + " failed: " + gai_strerror(rc));
  std::vector<std::string> out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, buf, sizeof buf);
      out.push_back(std::string(buf) + ":" + port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, buf, sizeof buf);
      out.push_back("[" + std::string(buf) + "]:" + port);
    }
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

Registry::Registry(RegistryOptions options) : options_(std::move(options)) {
  if (!options_.make_client) {
    const ConnectionOptions connection = options_.connection;
    options_.make_client = [connection](const std::string& address, WorkerListener* listener) {
      return std::make_shared<WorkerConnection>(address, listener, connection);
    };
  }
  if (!options_.resolve) options_.resolve = ResolveWithGetaddrinfo;
  // The maintenance thread expires self-registrations (and resolves DNS once
  // StartDns was called).
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
}

Registry::~Registry() { Stop(); }

void Registry::Stop() {
  std::vector<std::shared_ptr<WorkerClient>> to_stop;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [addr, m] : members_) to_stop.push_back(std::move(m.connection));
    members_.clear();
    for (auto& r : retired_) to_stop.push_back(std::move(r));
    retired_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(dns_mu_);
    stop_ = true;
  }
  dns_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  for (auto& c : to_stop) {
    if (c) c->Stop();
  }
}

Registry::Member* Registry::FindMember(WorkerClient* w) {
  for (auto& [addr, m] : members_) {
    if (m.connection.get() == w) return &m;
  }
  return nullptr;
}

void Registry::Reconcile() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = members_.begin(); it != members_.end();) {
    Member& m = it->second;
    const bool registered = m.registered_until && *m.registered_until > now;
    if (!m.from_static && !m.from_dns && !registered) {
      Log(LogLevel::kInfo, "router", "worker " + it->first + " left the membership");
      if (m.group != nullptr && m.slot >= 0) {
        m.group->SetSlot(m.slot, nullptr);
        m.group->index.RemoveWorker(m.slot);
      }
      // Stopped outside the lock; freed when the last request using it ends.
      if (m.connection) retired_.push_back(std::move(m.connection));
      it = members_.erase(it);
      continue;
    }
    if (!m.connection) {
      m.connection = options_.make_client(it->first, this);
      m.connection->Start();
      Log(LogLevel::kInfo, "router", "worker " + it->first + " joined the membership");
    }
    ++it;
  }
}

void Registry::StopRetired() {
  std::vector<std::shared_ptr<WorkerClient>> retired;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    retired.swap(retired_);
  }
  for (auto& c : retired) c->Stop();
}

void Registry::SetStaticWorkers(const std::vector<std::string>& addresses) {
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (auto& [addr, m] : members_) m.from_static = false;
    for (const std::string& a : addresses) members_[a].from_static = true;
    Reconcile();
  }
  StopRetired();
}

void Registry::Heartbeat(const std::string& address, std::chrono::seconds ttl) {
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (stopping_) return;
    members_[address].registered_until = std::chrono::steady_clock::now() + ttl;
    Reconcile();
  }
  StopRetired();
}

void Registry::Deregister(const std::string& address) {
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = members_.find(address);
    if (it == members_.end()) return;
    it->second.registered_until.reset();
    Reconcile();
  }
  StopRetired();
}

Status Registry::StartDns(const std::string& name_and_port) {
  const size_t colon = name_and_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == name_and_port.size()) {
    return InvalidArgumentError("DNS worker source \"" + name_and_port + "\" must be NAME:PORT");
  }
  {
    std::lock_guard<std::mutex> lock(dns_mu_);
    dns_host_ = name_and_port.substr(0, colon);
    dns_port_ = name_and_port.substr(colon + 1);
    dns_due_ = true;
  }
  dns_cv_.notify_all();
  return Status::Ok();
}

void Registry::MaintenanceLoop() {
  auto next_dns = std::chrono::steady_clock::now();
  for (;;) {
    std::string host, port;
    {
      std::unique_lock<std::mutex> lock(dns_mu_);
      dns_cv_.wait_for(
          lock, std::min<std::chrono::milliseconds>(std::chrono::seconds(1), options_.dns_refresh),
          [this] { return stop_ || dns_due_; });
      if (stop_) return;
      if (dns_due_ || std::chrono::steady_clock::now() >= next_dns) {
        host = dns_host_;
        port = dns_port_;
        dns_due_ = false;
      }
    }
    std::set<std::string> resolved;
    bool dns_ok = false;
    if (!host.empty()) {
      next_dns = std::chrono::steady_clock::now() + options_.dns_refresh;
      auto addresses = options_.resolve(host, port);
      if (addresses.ok()) {
        dns_ok = true;
        resolved.insert(addresses->begin(), addresses->end());
      } else {
        Log(LogLevel::kWarning, "router", addresses.status().message());
      }
    }
    {
      std::unique_lock<std::shared_mutex> lock(mu_);
      if (stopping_) return;
      if (dns_ok) {
        // A failed lookup keeps the previous answer rather than emptying the set.
        for (auto& [addr, m] : members_) m.from_dns = resolved.count(addr) > 0;
        for (const std::string& a : resolved) members_[a].from_dns = true;
      }
      Reconcile();  // also expires lapsed self-registrations
    }
    StopRetired();
  }
}

void Registry::OnWorkerInfo(WorkerClient* w, const v1::InfoResponse& info) {
  // Build the tokenizer outside the lock (a large vocabulary takes ~0.2 s).
  std::shared_ptr<const Tokenizer> tokenizer;
  Status tok_status;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = groups_.find(info.model_name());
    if (it != groups_.end() && it->second->digest == info.model_digest())
      tokenizer = it->second->tokenizer;
  }
  if (!tokenizer) {
    auto config = TokenizerConfigFromSpec(info.tokenizer());
    if (config.ok()) {
      auto t = Tokenizer::Create(std::move(*config));
      if (t.ok()) {
        tokenizer = std::move(t).value();
      } else {
        tok_status = t.status();
      }
    } else {
      tok_status = config.status();
    }
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  Member* m = FindMember(w);
  if (m == nullptr) return;
  if (!tokenizer) {
    Log(LogLevel::kError, "router",
        "worker " + w->address() + ": unusable tokenizer: " + tok_status.message());
    return;
  }
  auto& group = groups_[info.model_name()];
  if (!group) {
    group = std::make_unique<ModelGroup>();
    group->index.set_optimistic_ttl(options_.optimistic_ttl);
    group->name = info.model_name();
    group->digest = info.model_digest();
    group->block_size = static_cast<int>(info.block_size());
    group->context_length = static_cast<int32_t>(info.context_length());
    group->n_vocab = static_cast<int32_t>(info.n_vocab());
    group->tokenizer = tokenizer;
    const std::string eos =
        info.tokenizer().eos_id() >= 0 && info.tokenizer().eos_id() < info.tokenizer().tokens_size()
            ? info.tokenizer().tokens(info.tokenizer().eos_id())
            : std::string(ChatTemplate::kDefaultEosText);
    const std::string bos =
        info.tokenizer().bos_id() >= 0 && info.tokenizer().bos_id() < info.tokenizer().tokens_size()
            ? info.tokenizer().tokens(info.tokenizer().bos_id())
            : std::string();
    auto tmpl = options_.chat_template_override.empty()
                    ? ChatTemplate::FromGguf(info.chat_template(), bos, eos)
                    : ChatTemplate::FromName(options_.chat_template_override, eos);
    if (tmpl.ok()) {
      group->chat_template = *tmpl;
    } else {
      group->chat_template_error = tmpl.status();
      Log(LogLevel::kError, "router", "model " + group->name + ": " + tmpl.status().message());
    }
    Log(LogLevel::kInfo, "router",
        "model " + group->name + " (" + group->digest + "), block size " +
            std::to_string(group->block_size) + ", chat template " +
            (group->chat_template ? std::string(group->chat_template->name()) : "none"));
  } else if (group->digest != info.model_digest() ||
             group->block_size != static_cast<int>(info.block_size())) {
    Log(LogLevel::kError, "router",
        "worker " + w->address() + " serves " + info.model_name() + " with digest " +
            info.model_digest() + " / block size " + std::to_string(info.block_size()) +
            ", unlike the other workers of that model (" + group->digest +
            "); it is not routed to");
    return;
  }
  if (m->group != group.get()) {
    if (m->group != nullptr && m->slot >= 0) {
      m->group->SetSlot(m->slot, nullptr);
      m->group->index.RemoveWorker(m->slot);
    }
    int free_slot = -1;
    for (int i = 0; i < kMaxWorkersPerModel; ++i) {
      if (group->slots[i] == nullptr) {
        free_slot = i;
        break;
      }
    }
    if (free_slot < 0) {
      Log(LogLevel::kError, "router",
          "model " + group->name + " already has " + std::to_string(kMaxWorkersPerModel) +
              " workers; " + w->address() + " is not routed to");
      return;
    }
    group->SetSlot(free_slot, m->connection);
    m->group = group.get();
    m->slot = free_slot;
  }
}

void Registry::OnHealthChanged(WorkerClient* w, bool healthy) {
  if (healthy) return;  // entries come back through a fresh snapshot
  std::shared_lock<std::shared_mutex> lock(mu_);
  Member* m = FindMember(w);
  if (m != nullptr && m->group != nullptr && m->slot >= 0) m->group->index.RemoveWorker(m->slot);
}

void Registry::OnIndexReset(WorkerClient* w) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  Member* m = FindMember(w);
  if (m != nullptr && m->group != nullptr && m->slot >= 0) m->group->index.RemoveWorker(m->slot);
}

void Registry::OnKvEvents(WorkerClient* w, const v1::KvEventBatch& batch) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  Member* m = FindMember(w);
  if (m == nullptr || m->group == nullptr || m->slot < 0) return;
  PrefixIndex& index = m->group->index;
  std::vector<BlockHash> hashes;
  for (const v1::KvEvent& e : batch.events()) {
    hashes.clear();
    const auto& raw = e.has_stored() ? e.stored().block_hashes() : e.removed().block_hashes();
    for (const std::string& r : raw) {
      BlockHash h;
      if (BlockHash::FromBytes(r, &h)) hashes.push_back(h);
    }
    // Workers that predate tiers send UNSPECIFIED: their blocks are on the device.
    const v1::CacheTier tier = e.has_stored() ? e.stored().tier() : e.removed().tier();
    const IndexTier where = tier == v1::CACHE_TIER_HOST ? IndexTier::kHost : IndexTier::kDevice;
    if (e.has_stored()) {
      index.AddExact(m->slot, hashes, where);
    } else if (e.has_removed()) {
      index.RemoveExact(m->slot, hashes, where);
    } else if (e.has_cleared()) {
      index.RemoveWorker(m->slot);
    }
  }
}

StatusOr<ModelSnapshot> Registry::Snapshot(const std::string& name) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::string> served;
  for (auto& [n, g] : groups_) served.push_back(n);
  ASSIGN_OR_RETURN(std::string resolved, ResolveModelName(name, served, options_.model_aliases,
                                                          options_.strict_model_names));
  ModelGroup* group = groups_.at(resolved).get();
  WorkerSet healthy;
  group->occupied.ForEach([&](int slot) {
    if (group->slots[slot]->healthy()) healthy.Add(slot);
  });
  std::lock_guard<std::mutex> cache_lock(group->healthy_mu);
  if (group->healthy == nullptr || group->healthy_slots != healthy ||
      group->healthy_version != group->slots_version) {
    std::vector<Candidate> list;
    list.reserve(static_cast<size_t>(healthy.size()));
    healthy.ForEach([&](int slot) { list.push_back({slot, group->slots[slot]}); });
    group->healthy = std::make_shared<const std::vector<Candidate>>(std::move(list));
    group->healthy_slots = healthy;
    group->healthy_version = group->slots_version;
  }
  return ModelSnapshot(group, group->healthy);
}

void ModelGroup::SetSlot(int slot, std::shared_ptr<WorkerClient> client) {
  if (client != nullptr) {
    occupied.Add(slot);
  } else {
    occupied.Remove(slot);
  }
  slots[slot] = std::move(client);
  ++slots_version;
  // A client that left is freed once its last snapshot or lease is gone,
  // not kept by this list until the next snapshot.
  std::lock_guard<std::mutex> lock(healthy_mu);
  healthy.reset();
}

std::vector<std::string> Registry::ModelNames() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto& [n, g] : groups_) out.push_back(n);
  return out;
}

std::map<std::string, int> Registry::HealthyCounts() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::map<std::string, int> out;
  for (auto& [n, g] : groups_) {
    int healthy = 0;
    for (const auto& w : g->slots) healthy += w != nullptr && w->healthy();
    out[n] = healthy;
  }
  return out;
}

std::vector<std::shared_ptr<WorkerClient>> Registry::AllConnections() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::shared_ptr<WorkerClient>> out;
  for (auto& [addr, m] : members_) {
    if (m.connection) out.push_back(m.connection);
  }
  return out;
}

std::map<std::string, int64_t> Registry::IndexedBlocks() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::map<std::string, int64_t> out;
  for (auto& [addr, m] : members_) {
    if (m.connection && m.group != nullptr && m.slot >= 0) {
      out[m.connection->worker_id()] = static_cast<int64_t>(m.group->index.exact_count(m.slot));
    }
  }
  return out;
}

bool Registry::AnyHealthy() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (auto& [addr, m] : members_) {
    if (m.connection && m.connection->healthy() && m.group != nullptr) return true;
  }
  return false;
}

}  // namespace kvmesh::router
