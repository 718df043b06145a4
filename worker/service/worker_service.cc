#include "worker/service/worker_service.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "common/log.h"
#include "common/tokenizer_spec.h"
#include "worker/service/generate_request.h"

namespace kvmesh {
namespace {

// Outputs of one request, handed from the engine thread to the call's thread.
class OutputQueue {
 public:
  void Push(RequestOutput&& out) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(out));
    }
    cv_.notify_one();
  }
  bool Pop(RequestOutput* out, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !queue_.empty(); })) return false;
    *out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestOutput> queue_;
};

v1::FinishReason ToProto(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case FinishReason::kCancelled:
    case FinishReason::kDeadline:
      return v1::FINISH_REASON_CANCELLED;
    case FinishReason::kContext:
      return v1::FINISH_REASON_CONTEXT;
    default:
      return v1::FINISH_REASON_UNSPECIFIED;
  }
}

grpc::StatusCode ToGrpcCode(StatusCode c) {
  return static_cast<grpc::StatusCode>(static_cast<int>(c));
}

void ToProto(const TokenLogprob& in, v1::TokenLogprob* out) {
  out->set_token(in.token);
  out->set_logprob(in.logprob);
  for (const auto& [token, logprob] : in.top) {
    v1::TokenLogprob* alt = out->add_top();
    alt->set_token(token);
    alt->set_logprob(logprob);
  }
}

}  // namespace

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), status.message());
}

WorkerServiceImpl::WorkerServiceImpl(const Model& model, const Tokenizer& tokenizer, Engine& engine,
                                     WorkerMetrics& metrics, WorkerIdentity identity,
                                     WorkerAccess access)
    : model_(model),
      tokenizer_(tokenizer),
      engine_(engine),
      constraints_(tokenizer),
      metrics_(metrics),
      identity_(std::move(identity)),
      service_token_(std::move(access.service_token)),
      transport_(std::move(access.peers)),
      fetcher_(engine, model.identity(), identity_.worker_id, transport_, metrics) {
  const ModelConfig& c = model.config();
  info_.set_model_name(c.name);
  info_.set_model_digest(model.identity());
  info_.set_arch(c.arch_name);
  info_.set_n_layer(c.n_layer);
  info_.set_n_embd(c.n_embd);
  info_.set_n_head(c.n_head);
  info_.set_n_head_kv(c.n_head_kv);
  info_.set_head_dim(c.head_dim);
  info_.set_n_vocab(c.n_vocab);
  info_.set_context_length(engine.max_model_len());
  TokenizerConfigToSpec(tokenizer.config(), info_.mutable_tokenizer());
  if (auto t = model.file().GetString("tokenizer.chat_template"); t.ok()) {
    info_.set_chat_template(std::string(*t));
  }
  info_.set_block_size(engine.block_size());
  const BlockHash root = engine.hash_root();
  info_.set_hash_root(std::string(root.AsBytes()));
  info_.set_kv_type(identity_.kv_type);
  info_.set_kv_capacity_blocks(engine.num_blocks());
  info_.set_worker_id(identity_.worker_id);
  info_.set_role(identity_.role);
  info_.set_kv_page_format(engine.page_format());
  info_.set_split(std::string(SplitKindName(identity_.plan.split)));
  for (size_t d = 0; d < identity_.plan.devices.size(); ++d) {
    const DeviceShard& shard = identity_.plan.devices[d];
    v1::DeviceInfo* info = info_.add_devices();
    info->set_name(shard.device.ToString());
    info->set_layer_begin(shard.layer_begin);
    info->set_layer_end(shard.layer_end);
    info->set_kv_head_begin(shard.kv_head_begin);
    info->set_kv_head_end(shard.kv_head_end);
    info->set_ffn_begin(shard.ff_begin);
    info->set_ffn_end(shard.ff_end);
    info->set_vocab_begin(shard.vocab_begin);
    info->set_vocab_end(shard.vocab_end);
    info->set_threads(shard.threads);
    if (d < identity_.devices.size()) {
      info->set_weight_bytes(identity_.devices[d].weight_bytes);
      info->set_kv_bytes(identity_.devices[d].kv_bytes);
    }
  }
}

grpc::Status WorkerServiceImpl::Authorize(const grpc::ServerContext& ctx) const {
  return CheckBearerToken(ctx, service_token_, "the Worker service", "service_token");
}

grpc::Status WorkerServiceImpl::Info(grpc::ServerContext* ctx, const v1::InfoRequest*,
                                     v1::InfoResponse* resp) {
  if (grpc::Status s = Authorize(*ctx); !s.ok()) return s;
  *resp = info_;
  resp->set_epoch(engine_.epoch());
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Load(grpc::ServerContext* ctx, const v1::LoadRequest*,
                                     v1::LoadResponse* resp) {
  if (grpc::Status s = Authorize(*ctx); !s.ok()) return s;
  FillLoad(resp);
  return grpc::Status::OK;
}

void WorkerServiceImpl::FillLoad(v1::LoadResponse* resp) const {
  const EngineLoad load = engine_.GetLoad();
  resp->set_running(load.running);
  resp->set_waiting(load.waiting);
  resp->set_kv_blocks_total(load.blocks_total);
  resp->set_kv_blocks_used(load.blocks_used);
  resp->set_kv_blocks_cached(load.blocks_cached);
  resp->set_kv_blocks_free(load.blocks_free);
  resp->set_kv_host_blocks(load.host_blocks);
  resp->set_kv_host_blocks_total(load.host_blocks_capacity);
  resp->set_host_restore_tokens_per_s(load.host_restore_tokens_per_s);
  resp->set_peer_fetch_tokens_per_s(metrics_.peer_fetch_tokens_per_s());
  resp->set_prefill_tokens_per_s(load.prefill_tokens_per_s);
  resp->set_decode_tokens_per_s(load.decode_tokens_per_s);
  resp->set_queued_prefill_tokens(load.queued_prefill_tokens);
  resp->set_max_tokens_per_step(static_cast<uint32_t>(load.max_tokens_per_step));
  resp->set_kv_refill_ratio(load.kv_refill_ratio);
  resp->set_epoch(engine_.epoch());
}

grpc::Status WorkerServiceImpl::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                         grpc::ServerWriter<v1::GenerateResponse>* writer) {
  auto reject = [&](const Status& s) {
    metrics_.OnRejected(std::string(StatusCodeName(s.code())));
    return ToGrpc(s);
  };
  if (grpc::Status s = Authorize(*ctx); !s.ok()) {
    metrics_.OnRejected("UNAUTHENTICATED");
    return s;
  }
  auto converted = ValidateGenerateRequest(*req, tokenizer_, constraints_);
  if (!converted.ok()) return reject(converted.status());
  EngineRequest er = std::move(converted).value();
  if (er.id.empty()) er.id = "w" + std::to_string(next_request_id_++);
  if (ctx->deadline() != std::chrono::system_clock::time_point::max()) {
    er.deadline = SteadyClock::now() + (ctx->deadline() - std::chrono::system_clock::now());
  }
  // Scoring reuses no cached prefix; window pages take no pages from peers.
  if (req->has_peer_fetch() && !req->prompt_logprobs() && !engine_.window_pages()) {
    if (Status s = fetcher_.Fetch(req->peer_fetch(), ctx->deadline(), &er); !s.ok())
      return reject(s);
  }
  auto queue = std::make_shared<OutputQueue>();
  er.on_output = [queue](RequestOutput&& out) { queue->Push(std::move(out)); };
  const std::string id = er.id;
  const int32_t first_prompt_token = er.prompt.empty() ? 0 : er.prompt[0];
  bool prompt_logprobs_pending = req->prompt_logprobs();
  if (Status s = engine_.Submit(std::move(er)); !s.ok()) return reject(s);

  bool cancelled = false;
  for (;;) {
    RequestOutput out;
    if (!queue->Pop(&out, std::chrono::milliseconds(50))) {
      if (!cancelled && ctx->IsCancelled()) {
        engine_.Cancel(id);
        cancelled = true;
      }
      continue;
    }
    if (out.finished && out.finish_reason == FinishReason::kError) {
      engine_.Cancel(id);  // the request's other choices
      return ToGrpc(out.error);
    }
    v1::GenerateResponse resp;
    resp.mutable_tokens()->Assign(out.tokens.begin(), out.tokens.end());
    resp.set_text(out.text);
    resp.set_prompt_tokens_computed(static_cast<uint32_t>(out.prompt_tokens_computed));
    resp.set_choice(static_cast<uint32_t>(out.choice));
    for (const TokenLogprob& lp : out.logprobs) ToProto(lp, resp.add_logprobs());
    // The engine hands them over with choice 0's first output that has
    // tokens or finishes.
    if (prompt_logprobs_pending && out.choice == 0 && (!out.tokens.empty() || out.finished)) {
      prompt_logprobs_pending = false;
      resp.add_prompt_logprobs()->set_token(first_prompt_token);  // nothing predicts it
      for (const TokenLogprob& lp : out.prompt_logprobs) ToProto(lp, resp.add_prompt_logprobs());
    }
    if (out.finished) {
      // The router predicted choice 0's cache hit (forked choices share it).
      if (out.choice == 0 && (req->predicted_cached_tokens() > 0 || out.cached_tokens > 0)) {
        metrics_.OnPrediction(static_cast<int32_t>(req->predicted_cached_tokens()),
                              out.cached_tokens);
      }
      if (out.finish_reason == FinishReason::kDeadline) {
        engine_.Cancel(id);
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "request deadline passed");
      }
      if (cancelled || out.finish_reason == FinishReason::kCancelled) {
        engine_.Cancel(id);
        return grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
      }
      resp.set_finish_reason(ToProto(out.finish_reason));
      v1::Usage* usage = resp.mutable_usage();
      usage->set_prompt_tokens(out.prompt_tokens);
      usage->set_cached_tokens(out.cached_tokens);
      usage->set_completion_tokens(out.completion_tokens);
      v1::Timings* t = resp.mutable_timings();
      t->set_queue_ms(out.queue_ms);
      t->set_ttft_ms(out.ttft_ms);
      t->set_total_ms(out.total_ms);
      if (out.completion_tokens > 1 && out.total_ms > out.ttft_ms) {
        t->set_decode_tokens_per_s((out.completion_tokens - 1) * 1e3 /
                                   (out.total_ms - out.ttft_ms));
      }
      resp.set_seed(out.seed);
      resp.set_stop_sequence(out.stop_sequence);
    }
    if (!cancelled && !writer->Write(resp)) {
      engine_.Cancel(id);  // the client is gone
      cancelled = true;
    }
    if (out.last_of_request) return grpc::Status::OK;
  }
}

grpc::Status WorkerServiceImpl::SubscribeKvEvents(grpc::ServerContext* ctx,
                                                  const v1::SubscribeKvEventsRequest*,
                                                  grpc::ServerWriter<v1::KvEventBatch>* writer) {
  if (grpc::Status s = Authorize(*ctx); !s.ok()) return s;
  auto sub = engine_.kv_events().Subscribe();
  while (!ctx->IsCancelled() && !shutting_down_) {
    KvEventBatch batch;
    if (!sub->Next(&batch, std::chrono::milliseconds(100))) {
      if (sub->closed()) break;
      continue;
    }
    v1::KvEventBatch out;
    out.set_epoch(batch.epoch);
    out.set_sequence(batch.sequence);
    out.set_snapshot(batch.snapshot);
    for (const KvEvent& e : batch.events) {
      v1::KvEvent* pe = out.add_events();
      const auto tier = e.tier == CacheTier::kHost ? v1::CACHE_TIER_HOST : v1::CACHE_TIER_DEVICE;
      switch (e.kind) {
        case KvEvent::Kind::kStored: {
          v1::BlockStored* s = pe->mutable_stored();
          for (const BlockHash& h : e.hashes) s->add_block_hashes(std::string(h.AsBytes()));
          if (e.parent) s->set_parent_hash(std::string(e.parent->AsBytes()));
          s->set_tier(tier);
          break;
        }
        case KvEvent::Kind::kRemoved: {
          v1::BlockRemoved* r = pe->mutable_removed();
          for (const BlockHash& h : e.hashes) r->add_block_hashes(std::string(h.AsBytes()));
          r->set_tier(tier);
          break;
        }
        case KvEvent::Kind::kAllCleared:
          pe->mutable_cleared();
          break;
      }
    }
    FillLoad(out.mutable_load());
    if (!writer->Write(out)) break;
  }
  if (sub->overflowed()) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "subscriber fell too far behind; resubscribe for a fresh snapshot");
  }
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::FetchKvPages(grpc::ServerContext* ctx,
                                             const v1::FetchKvPagesRequest* req,
                                             grpc::ServerWriter<v1::KvPageBatch>* writer) {
  if (grpc::Status s = Authorize(*ctx); !s.ok()) return s;
  if (Status s = CheckNoUnknownFields(*req, "FetchKvPagesRequest"); !s.ok()) return ToGrpc(s);
  return ToGrpc(ServeKvPages(engine_, *req, writer, metrics_));
}

grpc::Status WorkerAdminImpl::Authorize(grpc::ServerContext* ctx) const {
  return CheckBearerToken(*ctx, token_, "WorkerAdmin", "admin_token");
}

void WorkerAdminImpl::Fill(v1::RuntimeConfig* out) const {
  const SchedulerLimits l = engine_.limits();
  out->set_max_tokens_per_step(l.max_tokens_per_step);
  out->set_max_running_requests(l.max_running);
  out->set_max_waiting_requests(l.max_waiting);
  out->set_log_level(std::string(LogLevelName(GetLogLevel())));
}

grpc::Status WorkerAdminImpl::GetRuntimeConfig(grpc::ServerContext* ctx,
                                               const v1::GetRuntimeConfigRequest*,
                                               v1::RuntimeConfig* resp) {
  if (auto s = Authorize(ctx); !s.ok()) return s;
  Fill(resp);
  return grpc::Status::OK;
}

grpc::Status WorkerAdminImpl::UpdateRuntimeConfig(grpc::ServerContext* ctx,
                                                  const v1::UpdateRuntimeConfigRequest* req,
                                                  v1::RuntimeConfig* resp) {
  if (auto s = Authorize(ctx); !s.ok()) return s;
  if (Status s = CheckNoUnknownFields(*req, "UpdateRuntimeConfigRequest"); !s.ok())
    return ToGrpc(s);
  LogLevel level = GetLogLevel();
  if (req->has_log_level() && !ParseLogLevel(req->log_level(), &level)) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "log_level \"" + req->log_level() + "\" is not one of debug, info, warning, error");
  }
  SchedulerLimits l = engine_.limits();
  if (req->has_max_tokens_per_step())
    l.max_tokens_per_step = static_cast<int32_t>(req->max_tokens_per_step());
  if (req->has_max_running_requests())
    l.max_running = static_cast<int32_t>(req->max_running_requests());
  if (req->has_max_waiting_requests())
    l.max_waiting = static_cast<int32_t>(req->max_waiting_requests());
  if (Status s = engine_.SetLimits(l); !s.ok()) return ToGrpc(s);
  SetLogLevel(level);
  Log(LogLevel::kInfo, "admin",
      "runtime config: max_tokens_per_step=" + std::to_string(l.max_tokens_per_step) +
          " max_running=" + std::to_string(l.max_running) + " max_waiting=" +
          std::to_string(l.max_waiting) + " log_level=" + std::string(LogLevelName(level)));
  Fill(resp);
  return grpc::Status::OK;
}

grpc::Status WorkerAdminImpl::ClearCache(grpc::ServerContext* ctx, const v1::ClearCacheRequest*,
                                         v1::ClearCacheResponse* resp) {
  if (auto s = Authorize(ctx); !s.ok()) return s;
  resp->set_blocks_cleared(engine_.ClearCache());
  return grpc::Status::OK;
}

grpc::Status WorkerAdminImpl::InjectFault(grpc::ServerContext* ctx,
                                          const v1::InjectFaultRequest* req,
                                          v1::InjectFaultResponse* resp) {
  if (auto s = Authorize(ctx); !s.ok()) return s;
  if (Status s = CheckNoUnknownFields(*req, "InjectFaultRequest"); !s.ok()) return ToGrpc(s);
  if (req->has_step_delay_ms()) {
    if (req->step_delay_ms() > 60000) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "step_delay_ms is " + std::to_string(req->step_delay_ms()) + "; at most 60000");
    }
    engine_.SetStepDelay(std::chrono::milliseconds(req->step_delay_ms()));
  }
  if (req->drop_kv_event_batches() > 0) {
    engine_.kv_events().DropNextBatches(req->drop_kv_event_batches());
  }
  resp->set_step_delay_ms(static_cast<uint32_t>(engine_.step_delay().count()));
  resp->set_kv_event_batches_to_drop(engine_.kv_events().batches_to_drop());
  Log(LogLevel::kWarning, "admin",
      "fault injected: step delay " + std::to_string(resp->step_delay_ms()) + " ms, " +
          std::to_string(resp->kv_event_batches_to_drop()) + " KV event batches to drop");
  return grpc::Status::OK;
}

}  // namespace kvmesh
