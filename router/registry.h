// Registry: which workers exist, which model each serves, and which of them
// are healthy — plus each model's tokenizer, chat template and prefix index.
//
// Membership comes from three sources, all feeding SetMembers-style calls:
// a static list (flags/config), DNS (every address behind a name, e.g. a
// Kubernetes headless service, re-resolved periodically) and
// self-registration (RouterRegistry.Register heartbeats with a TTL). Each
// member gets a WorkerConnection; once its Info arrives, it joins the group
// of its model (a slot in that model's table). A worker that turns unhealthy
// leaves the routing set and its index entries are dropped; it rejoins when
// healthy again, and its entries come back from a fresh snapshot.
//
// Thread-safe. Routing threads take a ModelSnapshot (a consistent copy of a
// model's candidates) and never hold the registry lock while forwarding.
// Clients are held by shared ownership (router/worker_client.h): one that
// leaves the membership is stopped at once and freed when the last snapshot
// or request lease holding it lets go. The clients and the DNS lookup come
// from factories in RegistryOptions, so tests can put fakes in their place.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/block_hash.h"
#include "common/tokenizer/tokenizer.h"
#include "router/chat/chat_template.h"
#include "router/model_names.h"
#include "router/prefix_index.h"
#include "router/worker_client.h"
#include "router/worker_connection.h"
#include "router/worker_set.h"

namespace kvmesh::router {

struct Candidate {
  int slot = 0;
  std::shared_ptr<WorkerClient> worker;
};

struct ModelGroup {
  std::string name;
  std::string digest;  // model identity; roots the block hashes
  int block_size = 16;
  int32_t context_length = 0;
  int32_t n_vocab = 0;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // nullopt: template not recognised
  Status chat_template_error;                 // why, when nullopt
  PrefixIndex index;
  // Under the registry's exclusive lock: read them under its shared lock.
  std::array<std::shared_ptr<WorkerClient>, kMaxWorkersPerModel> slots{};
  WorkerSet occupied{};        // the slots that are set
  uint64_t slots_version = 0;  // bumped by each change of slots
  void SetSlot(int slot, std::shared_ptr<WorkerClient> client);

  // The healthy candidates last handed out, with the slots and the version
  // they were built from: snapshots share the list while neither changed
  // (Registry::Snapshot). Guarded by healthy_mu.
  std::mutex healthy_mu{};
  std::shared_ptr<const std::vector<Candidate>> healthy{};
  WorkerSet healthy_slots{};
  uint64_t healthy_version = ~0ull;
};

// What a routing decision needs. The list of healthy candidates is
// immutable and shared by every snapshot taken while the model's workers and
// their health stay the same, so a snapshot costs a scan of the workers'
// health flags, not a copy of 1,000 owning pointers (whose reference counts
// routing threads would fight over).
struct ModelSnapshot {
  ModelGroup* group = nullptr;  // stable for the registry's lifetime
  std::shared_ptr<const std::vector<Candidate>> candidates;

  ModelSnapshot() : candidates(std::make_shared<const std::vector<Candidate>>()) {}
  ModelSnapshot(ModelGroup* g, std::vector<Candidate> healthy)
      : group(g), candidates(std::make_shared<const std::vector<Candidate>>(std::move(healthy))) {}
  ModelSnapshot(ModelGroup* g, std::shared_ptr<const std::vector<Candidate>> healthy)
      : group(g), candidates(std::move(healthy)) {}

  const std::vector<Candidate>& healthy() const { return *candidates; }
};

struct RegistryOptions {
  ConnectionOptions connection;
  std::chrono::milliseconds dns_refresh{std::chrono::seconds(10)};
  std::string chat_template_override;     // family name; empty: from the model
  std::vector<ModelAlias> model_aliases;  // see router/model_names.h
  bool strict_model_names = false;
  std::chrono::milliseconds optimistic_ttl{std::chrono::seconds(20)};
  // Makes the client of a new member; empty: a WorkerConnection with
  // `connection`.
  std::function<std::shared_ptr<WorkerClient>(const std::string& address, WorkerListener* listener)>
      make_client;
  // Resolves a DNS source to "ip:port" addresses; empty: getaddrinfo.
  std::function<StatusOr<std::vector<std::string>>(const std::string& host,
                                                   const std::string& port)>
      resolve;
};

class Registry : public WorkerListener {
 public:
  explicit Registry(RegistryOptions options);
  ~Registry() override;

  // Static members (replaces the previous static list).
  void SetStaticWorkers(const std::vector<std::string>& addresses);
  // Resolves "name:port" now and every dns_refresh; all addresses are members.
  Status StartDns(const std::string& name_and_port);
  // Self-registration heartbeat; the member expires `ttl` after the last one.
  void Heartbeat(const std::string& address, std::chrono::seconds ttl);
  void Deregister(const std::string& address);

  // The model called `name`, or the only model when `name` is empty.
  StatusOr<ModelSnapshot> Snapshot(const std::string& name);
  std::vector<std::string> ModelNames();
  // Healthy workers and their model, for /v1/models and metrics.
  std::map<std::string, int> HealthyCounts();
  std::vector<std::shared_ptr<WorkerClient>> AllConnections();
  // Blocks the prefix index holds for each worker (from its events), by worker id.
  std::map<std::string, int64_t> IndexedBlocks();
  // True once at least one worker is healthy.
  bool AnyHealthy();

  void Stop();

  // WorkerListener
  void OnWorkerInfo(WorkerClient* w, const v1::InfoResponse& info) override;
  void OnHealthChanged(WorkerClient* w, bool healthy) override;
  void OnIndexReset(WorkerClient* w) override;
  void OnKvEvents(WorkerClient* w, const v1::KvEventBatch& batch) override;

 private:
  struct Member {
    std::shared_ptr<WorkerClient> connection;
    bool from_static = false;
    bool from_dns = false;
    std::optional<std::chrono::steady_clock::time_point> registered_until;
    ModelGroup* group = nullptr;
    int slot = -1;
  };

  void Reconcile();  // starts/stops connections to match the member sources; needs mu_
  void MaintenanceLoop();
  Member* FindMember(WorkerClient* w);  // needs mu_
  void StopRetired();                   // takes mu_

  RegistryOptions options_;

 public:
  const std::vector<ModelAlias>& model_aliases() const { return options_.model_aliases; }

 private:
  std::shared_mutex mu_;
  std::map<std::string, Member> members_;                      // by address; guarded by mu_
  std::map<std::string, std::unique_ptr<ModelGroup>> groups_;  // guarded by mu_
  std::vector<std::shared_ptr<WorkerClient>> retired_;         // to stop; guarded by mu_
  bool stopping_ = false;
  std::mutex dns_mu_;
  std::condition_variable dns_cv_;
  bool stop_ = false;     // guarded by dns_mu_
  bool dns_due_ = false;  // guarded by dns_mu_
  std::string dns_host_;  // guarded by dns_mu_
  std::string dns_port_;  // guarded by dns_mu_
  std::thread maintenance_;
};

}  // namespace kvmesh::router
