// Disaggregated prefill and decode.
//
// When some of a model's workers have role prefill (and others can decode),
// a request whose prompt the best decode-side worker would mostly have to
// compute is split in two: a prefill worker, chosen by the policy among the
// prefill workers (prefix hits included), computes the prompt with
// max_tokens 0, which leaves its full blocks cached there; then the request
// goes to a decode worker, chosen by the policy among the others, with a
// peer_fetch hint for those blocks, so it fetches the pages instead of
// computing them and computes only the prompt's last partial block. Sampling
// (seed, grammar, stop strings, logprobs, choices) happens entirely on the
// decode worker, exactly as in colocated serving, and the client sees that
// worker's stream only.
//
// Long prefills thus never share a step with the decode workers' running
// decodes. Any failure falls back: a prefill that fails leaves the request
// to be served colocated, and a fetch that fails makes the decode worker
// compute the blocks itself. Nothing is lost either way.
#include <algorithm>

#include "common/log.h"
#include "router/router_core.h"
#include "router/worker_views.h"

namespace kvmesh::router {

std::optional<v1::PeerFetch> RouterCore::PrefillElsewhere(
    const ModelSnapshot& snap, const std::vector<BlockHash>& hashes, int32_t max_cacheable_blocks,
    const v1::GenerateRequest& forward, const MessageCallback& on_message, bool* cancelled) {
  ModelGroup& group = *snap.group;
  WorkerSet prefill, all;
  bool can_decode = false;
  for (const Candidate& c : snap.healthy()) {
    all.Add(c.slot);
    if (c.worker->role() == "prefill") {
      prefill.Add(c.slot);
    } else {
      can_decode = true;
    }
  }
  if (prefill.empty() || !can_decode || max_cacheable_blocks <= 0) return std::nullopt;
  const PrefixMatch match = group.index.Match(hashes, all);
  int32_t decode_blocks = 0;  // the most any decode-side worker holds
  for (const Candidate& c : snap.healthy()) {
    if (!prefill.Contains(c.slot)) decode_blocks = std::max(decode_blocks, match.blocks[c.slot]);
  }
  decode_blocks = std::min(decode_blocks, max_cacheable_blocks);
  if ((max_cacheable_blocks - decode_blocks) * group.block_size <
      options_.disagg_min_prompt_tokens) {
    return std::nullopt;  // cheaper computed where it is decoded
  }

  std::vector<WorkerView> views;
  std::vector<const Candidate*> conns;
  BuildWorkerViews(snap, prefill, match, max_cacheable_blocks, false, std::nullopt, &views, &conns);
  const Decision d =
      policy_->Choose({forward.prompt_tokens_size(), views, hashes, group.block_size});
  if (metrics_) metrics_->OnDecision(std::string(policy_->name()), "prefill_" + d.reason, 0);
  // Held for the prefill (the stream ends with it), its prompt counted as
  // the worker's queue meanwhile.
  WorkerLease worker(conns[d.index]->worker,
                     forward.prompt_tokens_size() - views[d.index].cached_tokens);
  group.index.AddOptimistic(views[d.index].slot, hashes);

  v1::GenerateRequest req;
  req.set_request_id(forward.request_id() + "/prefill");
  *req.mutable_prompt_tokens() = forward.prompt_tokens();
  req.set_cache_salt(forward.cache_salt());
  req.set_max_tokens(0);  // prefill only: the full blocks stay cached
  if (auto fetch = FetchHint(d, views, conns)) *req.mutable_peer_fetch() = *fetch;
  const std::unique_ptr<GenerateStream> stream = worker->Generate(req);
  GenerateStream* const raw = stream.get();
  // Cancelled when the prefill makes no progress (no prefill chunk) for the
  // request timeout, as a colocated request is.
  const std::unique_ptr<StreamWatchdog::Guard> watch = watchdog_.Watch([raw] { raw->Cancel(); });
  v1::GenerateResponse resp;
  v1::GenerateTextResponse progress;  // the client sees nothing of the prefill
  progress.set_request_id(forward.request_id());
  while (stream->Read(&resp)) {
    watch->Touch();
    if (!*cancelled && !on_message(progress)) {
      stream->Cancel();  // the client went away: the prefill stops there
      *cancelled = true;
    }
  }
  const grpc::Status status = stream->Finish();
  if (*cancelled) return std::nullopt;
  const std::string id(views[d.index].id);
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) worker->ReportFailure();
    Log(LogLevel::kWarning, "router",
        "request " + forward.request_id() + ": prefill on " + id + " failed (" +
            status.error_message() + "); serving it colocated");
    if (metrics_) metrics_->OnRetry("prefill_failed");
    return std::nullopt;
  }
  v1::PeerFetch where;
  where.set_address(worker->address());
  where.set_worker_id(id);
  where.set_first_block(0);
  where.set_end_block(static_cast<uint32_t>(max_cacheable_blocks));
  return where;
}

}  // namespace kvmesh::router
