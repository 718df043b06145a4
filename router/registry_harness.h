// RegistryHarness: a Registry whose workers are FakeWorkerClients, for tests.
// The test plays the part of each client's poller: Connect() delivers the
// worker's Info and marks it healthy, SetHealthy() flaps it, Events() feeds
// its KV events.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/tokenizer/test_util.h"
#include "common/tokenizer_spec.h"
#include "router/fake_worker_client.h"
#include "router/registry.h"

namespace kvmesh::router {

class RegistryHarness {
 public:
  explicit RegistryHarness(RegistryOptions options = {})
      : registry_(WithFakes(this, std::move(options))) {}

  Registry& registry() { return registry_; }

  // The fake client of `address`; nullptr when there is none (never made,
  // or freed).
  std::shared_ptr<FakeWorkerClient> worker(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(address);
    return it == clients_.end() ? nullptr : it->second.lock();
  }
  // How many clients of `address` were made, and how many were freed.
  int made(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    return made_[address];
  }
  int freed(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    return freed_[address];
  }

  // The worker answers its first Info and its polls: it joins its model.
  void Connect(const std::string& address, const v1::InfoResponse& info) {
    auto w = worker(address);
    ASSERT_NE(w, nullptr) << address << " is not a member";
    w->set_info(info);
    registry_.OnWorkerInfo(w.get(), info);
    SetHealthy(address, true);
  }
  void SetHealthy(const std::string& address, bool healthy) {
    auto w = worker(address);
    ASSERT_NE(w, nullptr) << address << " is not a member";
    w->set_healthy(healthy);
    registry_.OnHealthChanged(w.get(), healthy);
  }
  // The worker's event stream reports `hashes` stored on its device.
  void Stored(const std::string& address, const std::vector<BlockHash>& hashes) {
    Events(address, hashes, /*stored=*/true);
  }
  // The worker's event stream reports `hashes` removed from its device.
  void Removed(const std::string& address, const std::vector<BlockHash>& hashes) {
    Events(address, hashes, /*stored=*/false);
  }

  // The Info of a worker of model "tiny" (stories260K's tokenizer), block
  // size 16, context 512.
  static v1::InfoResponse ModelInfo(const std::string& worker_id, const std::string& role = "") {
    static const Tokenizer* tokenizer =
        testing_util::SharedTokenizerOrFail(testing_util::SharedDir() + "/models/stories260K.gguf");
    v1::InfoResponse info;
    info.set_model_name("tiny");
    info.set_model_digest("sha256:test");
    info.set_block_size(16);
    info.set_context_length(512);
    info.set_worker_id(worker_id);
    info.set_role(role);
    if (tokenizer != nullptr) {
      info.set_n_vocab(static_cast<uint32_t>(tokenizer->config().tokens.size()));
      TokenizerConfigToSpec(tokenizer->config(), info.mutable_tokenizer());
    }
    return info;
  }

 private:
  void Events(const std::string& address, const std::vector<BlockHash>& hashes, bool stored) {
    auto w = worker(address);
    ASSERT_NE(w, nullptr) << address << " is not a member";
    v1::KvEventBatch batch;
    v1::KvEvent* event = batch.add_events();
    auto* list = stored ? event->mutable_stored()->mutable_block_hashes()
                        : event->mutable_removed()->mutable_block_hashes();
    for (const BlockHash& h : hashes) list->Add(std::string(h.AsBytes()));
    registry_.OnKvEvents(w.get(), batch);
  }
  static RegistryOptions WithFakes(RegistryHarness* self, RegistryOptions options) {
    options.make_client = [self](const std::string& address, WorkerListener*) {
      auto client = std::make_shared<FakeWorkerClient>(address, [self, address] {
        std::lock_guard<std::mutex> lock(self->mu_);
        ++self->freed_[address];
      });
      std::lock_guard<std::mutex> lock(self->mu_);
      self->clients_[address] = client;
      ++self->made_[address];
      return client;
    };
    return options;
  }

  std::mutex mu_;  // before registry_: its clients report here as they go
  std::map<std::string, std::weak_ptr<FakeWorkerClient>> clients_;  // guarded by mu_
  std::map<std::string, int> made_;                                 // guarded by mu_
  std::map<std::string, int> freed_;                                // guarded by mu_
  Registry registry_;
};

}  // namespace kvmesh::router
