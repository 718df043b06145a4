// Peer prefix fetch on a worker: pulling a prompt's KV pages from the worker
// that holds them instead of computing them.
//
// The router decides (its prefix policy prices fetching against computing)
// and puts a PeerFetch hint in the GenerateRequest: "blocks [first, end) of
// this prompt are cached on the worker at ADDRESS". Before the request goes
// to the engine, PeerFetcher asks that worker for the blocks by their hashes
// (hashed here, under the request's cache salt), checks every page it gets
// back against the prompt (CheckPeerPages) and hands the good leading run to
// the engine, which caches them before admitting the request. Any failure
// (the peer unreachable or slow past the deadline, pages missing, a page
// that does not check out) only shortens the run: the blocks not fetched are
// computed, so a request never fails because of a fetch.
//
// Pages travel through a KvPageTransport. The gRPC one (Worker.FetchKvPages
// on the holder, pages in their stored bytes) is what runs on CPUs; a
// device-to-device transport (NCCL, RDMA) would implement the same
// interface and write into device memory directly.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/grpc_security.h"
#include "common/status.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "worker/engine/engine.h"
#include "worker/kv/kv_pages.h"
#include "worker/service/worker_metrics.h"

namespace kvmesh {

// The most pages one FetchKvPages call may ask for, and the most page bytes
// one answer carries; a KvPageBatch message holds at most kPageBatchBytes.
inline constexpr int kMaxFetchPages = 1 << 16;
inline constexpr size_t kMaxFetchBytes = size_t{1} << 30;
inline constexpr size_t kPageBatchBytes = size_t{4} << 20;
// How long a fetch may take at most (less when the request's deadline is
// nearer); past it the blocks are computed.
inline constexpr std::chrono::milliseconds kPeerFetchTimeout{2000};

// What a fetch brought: the pages received (the leading run of the asked
// hashes the peer holds, or its start when the fetch ended early) and why it
// ended early (unreachable, other page format, deadline passed), if it did.
struct FetchedPages {
  std::vector<KvPage> pages;
  Status status;
  // The holder's prefill speed when last measured (0: unknown).
  double holder_prefill_tokens_per_s = 0;
};

// Prefill time a fetch of `tokens` in `seconds` saved: what computing them
// would have taken, less the fetch. Priced at this worker's own prefill
// speed when it has measured one, else at the holder's (a decode worker
// that has not prefilled yet); 0 when neither is known.
double PeerFetchSavedSeconds(int64_t tokens, double seconds, double own_tokens_per_s,
                             double holder_tokens_per_s);

class KvPageTransport {
 public:
  virtual ~KvPageTransport() = default;
  virtual FetchedPages Fetch(const std::string& address, std::span<const BlockHash> hashes,
                             const std::string& page_format,
                             std::chrono::system_clock::time_point deadline) = 0;
};

// Worker.FetchKvPages over gRPC; channels to peers are kept and reused.
// `security` is how peers are dialed (TLS, the service token).
class GrpcKvPageTransport final : public KvPageTransport {
 public:
  explicit GrpcKvPageTransport(std::shared_ptr<const ChannelSecurity> security)
      : security_(std::move(security)) {}

  FetchedPages Fetch(const std::string& address, std::span<const BlockHash> hashes,
                     const std::string& page_format,
                     std::chrono::system_clock::time_point deadline) override;

 private:
  v1::Worker::Stub* StubFor(const std::string& address);

  const std::shared_ptr<const ChannelSecurity> security_;
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<v1::Worker::Stub>> stubs_;
};

// The holder's side: answers a FetchKvPages request from the engine's cache,
// writing batches of at most kPageBatchBytes.
Status ServeKvPages(Engine& engine, const v1::FetchKvPagesRequest& request,
                    grpc::ServerWriter<v1::KvPageBatch>* writer, WorkerMetrics& metrics);

class PeerFetcher {
 public:
  // `model_identity` roots the block hashes (Model::identity()).
  PeerFetcher(Engine& engine, std::string model_identity, std::string worker_id,
              KvPageTransport& transport, WorkerMetrics& metrics)
      : engine_(engine),
        model_identity_(std::move(model_identity)),
        worker_id_(std::move(worker_id)),
        transport_(transport),
        metrics_(metrics) {}

  // Fetches the hinted blocks of request->prompt (under its cache salt)
  // into request->peer_pages, or leaves them to be computed. An ill-formed
  // hint is an INVALID_ARGUMENT naming the field; everything else that goes
  // wrong is logged and counted, and returns OK.
  Status Fetch(const v1::PeerFetch& hint, std::chrono::system_clock::time_point deadline,
               EngineRequest* request);

 private:
  Engine& engine_;
  std::string model_identity_;
  std::string worker_id_;
  KvPageTransport& transport_;
  WorkerMetrics& metrics_;
};

}  // namespace kvmesh
