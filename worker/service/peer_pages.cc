#include "worker/service/peer_pages.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "common/log.h"

namespace kvmesh {
namespace {

Status FromGrpc(const grpc::Status& s, const std::string& address) {
  return Status(static_cast<StatusCode>(static_cast<int>(s.error_code())),
                "peer " + address + ": " + s.error_message());
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

v1::Worker::Stub* GrpcKvPageTransport::StubFor(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& stub = stubs_[address];
  if (!stub) {
    grpc::ChannelArguments args;
    // A batch holds at least one page, whatever its size.
    args.SetMaxReceiveMessageSize(64 << 20);
    stub = v1::Worker::NewStub(security_->Dial(address, args));
  }
  return stub.get();
}

FetchedPages GrpcKvPageTransport::Fetch(const std::string& address,
                                        std::span<const BlockHash> hashes,
                                        const std::string& page_format,
                                        std::chrono::system_clock::time_point deadline) {
  v1::Worker::Stub* stub = StubFor(address);
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  security_->Authorize(&ctx);
  v1::FetchKvPagesRequest request;
  for (const BlockHash& h : hashes) request.add_block_hashes(std::string(h.AsBytes()));
  request.set_page_format(page_format);
  auto reader = stub->FetchKvPages(&ctx, request);
  FetchedPages out;
  std::vector<KvPage>& pages = out.pages;
  v1::KvPageBatch batch;
  Status bad = Status::Ok();
  while (bad.ok() && reader->Read(&batch)) {
    if (out.holder_prefill_tokens_per_s == 0 && batch.holder_prefill_tokens_per_s() > 0) {
      out.holder_prefill_tokens_per_s = batch.holder_prefill_tokens_per_s();
    }
    for (const v1::KvPage& p : batch.pages()) {
      KvPage page;
      if (pages.size() >= hashes.size() || !BlockHash::FromBytes(p.hash(), &page.hash)) {
        bad =
            InvalidArgumentError("peer " + address + " sent page " + std::to_string(pages.size()) +
                                 (pages.size() >= hashes.size() ? ", more than were asked for"
                                                                : " with a malformed hash"));
        break;
      }
      page.tokens.assign(p.tokens().begin(), p.tokens().end());
      page.bytes.assign(p.data().begin(), p.data().end());
      pages.push_back(std::move(page));
    }
  }
  if (!bad.ok()) {
    ctx.TryCancel();
    reader->Finish();
    out.status = bad;  // the pages before the bad one stand
    return out;
  }
  // Pages read before an error (e.g. the deadline) stand too.
  if (const grpc::Status s = reader->Finish(); !s.ok()) out.status = FromGrpc(s, address);
  return out;
}

double PeerFetchSavedSeconds(int64_t tokens, double seconds, double own_tokens_per_s,
                             double holder_tokens_per_s) {
  const double rate = own_tokens_per_s > 0 ? own_tokens_per_s : holder_tokens_per_s;
  return rate > 0 ? static_cast<double>(tokens) / rate - seconds : 0;
}

Status ServeKvPages(Engine& engine, const v1::FetchKvPagesRequest& request,
                    grpc::ServerWriter<v1::KvPageBatch>* writer, WorkerMetrics& metrics) {
  if (request.block_hashes_size() > kMaxFetchPages) {
    return InvalidArgumentError("FetchKvPagesRequest asks for " +
                                std::to_string(request.block_hashes_size()) + " pages; at most " +
                                std::to_string(kMaxFetchPages) + " per call");
  }
  if (request.page_format() != engine.page_format()) {
    return FailedPreconditionError("this worker stores KV pages as \"" + engine.page_format() +
                                   "\", the asker as \"" + request.page_format() +
                                   "\": they cannot share pages");
  }
  std::vector<BlockHash> hashes(static_cast<size_t>(request.block_hashes_size()));
  for (int i = 0; i < request.block_hashes_size(); ++i) {
    if (!BlockHash::FromBytes(request.block_hashes(i), &hashes[i])) {
      return InvalidArgumentError("FetchKvPagesRequest.block_hashes[" + std::to_string(i) +
                                  "] has " + std::to_string(request.block_hashes(i).size()) +
                                  " bytes; a block hash has 16");
    }
  }
  ASSIGN_OR_RETURN(std::vector<KvPage> pages,
                   engine.ExportPages(std::move(hashes), kMaxFetchBytes));
  v1::KvPageBatch batch;
  batch.set_holder_prefill_tokens_per_s(engine.GetLoad().last_prefill_tokens_per_s);
  size_t batch_bytes = 0, total_bytes = 0;
  for (const KvPage& page : pages) {
    if (batch_bytes > 0 && batch_bytes + page.bytes.size() > kPageBatchBytes) {
      if (!writer->Write(batch)) return CancelledError("the asker went away");
      batch.Clear();
      batch_bytes = 0;
    }
    v1::KvPage* p = batch.add_pages();
    p->set_hash(std::string(page.hash.AsBytes()));
    p->mutable_tokens()->Assign(page.tokens.begin(), page.tokens.end());
    p->set_data(page.bytes.data(), page.bytes.size());
    batch_bytes += page.bytes.size();
    total_bytes += page.bytes.size();
  }
  if (batch.pages_size() > 0 && !writer->Write(batch)) return CancelledError("the asker went away");
  metrics.OnPeerExport(static_cast<int64_t>(pages.size()), static_cast<int64_t>(total_bytes));
  return Status::Ok();
}

Status PeerFetcher::Fetch(const v1::PeerFetch& hint, std::chrono::system_clock::time_point deadline,
                          EngineRequest* request) {
  if (hint.address().empty()) return InvalidArgumentError("peer_fetch.address is empty");
  if (hint.end_block() <= hint.first_block()) {
    return InvalidArgumentError("peer_fetch.end_block (" + std::to_string(hint.end_block()) +
                                ") must be past first_block (" +
                                std::to_string(hint.first_block()) + ")");
  }
  const int bs = engine_.block_size();
  const std::span<const int32_t> prompt = request->prompt;
  if (prompt.empty()) return Status::Ok();
  // At least one prompt token is always computed (for its logits).
  const uint32_t full = static_cast<uint32_t>((prompt.size() - 1) / bs);
  const uint32_t first = hint.first_block();
  const uint32_t end = std::min({hint.end_block(), full, first + uint32_t{kMaxFetchPages}});
  if (first >= end) return Status::Ok();  // the prompt is shorter than the router thought
  const std::vector<BlockHash> hashes =
      HashFullBlocks(RootHash(model_identity_, request->cache_salt),
                     prompt.first(static_cast<size_t>(end) * bs), bs);
  const std::string holder = hint.worker_id().empty() ? hint.address() : hint.worker_id();
  const std::string blocks = "blocks " + std::to_string(first) + ".." + std::to_string(end - 1);

  const auto t0 = std::chrono::steady_clock::now();
  const auto limit = std::min(deadline, std::chrono::system_clock::now() + kPeerFetchTimeout);
  FetchedPages fetched = transport_.Fetch(hint.address(), std::span(hashes).subspan(first),
                                          engine_.page_format(), limit);
  const double seconds = SecondsSince(t0);
  std::vector<KvPage>& pages = fetched.pages;
  if (!fetched.status.ok()) {
    Log(LogLevel::kWarning, "worker",
        "request " + request->id + ": fetching " + blocks + " from " + holder + " ended after " +
            std::to_string(pages.size()) +
            " pages; computing the rest: " + fetched.status.ToString());
    if (pages.empty()) {
      metrics_.OnPeerFetch("failed", 0, 0, seconds, 0);
      return Status::Ok();
    }
  }
  const PageCheck check =
      CheckPeerPages(pages, hashes, prompt, static_cast<int32_t>(first), bs, engine_.block_bytes());
  const char* result = !check.rejected.empty()                              ? "rejected"
                       : check.accepted < static_cast<int32_t>(end - first) ? "partial"
                                                                            : "ok";
  if (!check.rejected.empty()) {
    Log(LogLevel::kWarning, "worker",
        "request " + request->id + ": " + holder + " sent a page that does not match the prompt; " +
            "computing from there: " + check.rejected);
  }
  const int64_t tokens = static_cast<int64_t>(check.accepted) * bs;
  const double saved =
      PeerFetchSavedSeconds(tokens, seconds, engine_.GetLoad().last_prefill_tokens_per_s,
                            fetched.holder_prefill_tokens_per_s);
  metrics_.OnPeerFetch(result, tokens, static_cast<int64_t>(check.accepted) * engine_.block_bytes(),
                       seconds, saved);
  pages.resize(static_cast<size_t>(check.accepted));
  request->peer_pages = std::move(pages);
  request->peer_first_block = static_cast<int32_t>(first);
  return Status::Ok();
}

}  // namespace kvmesh
