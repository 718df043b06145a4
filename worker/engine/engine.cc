#include "worker/engine/engine.h"

#include <algorithm>
#include <limits>

#include "common/check.h"

namespace kvmesh {
namespace {

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The host tier's copies, through the executor's block interface.
class ExecutorCopier final : public KvBlockCopier {
 public:
  explicit ExecutorCopier(Executor* executor) : executor_(executor) {}
  Status ToHost(int32_t block, std::span<uint8_t> host) override {
    return executor_->ReadBlockInto(block, host);
  }
  Status FromHost(std::span<const uint8_t> host, int32_t block) override {
    return executor_->WriteBlock(block, host);
  }

 private:
  Executor* executor_;
};

}  // namespace

Engine::Engine(const ModelConfig& model, const Tokenizer& tokenizer,
               std::unique_ptr<Executor> executor, EngineConfig config, EngineObserver* observer)
    : model_(model),
      tokenizer_(tokenizer),
      executor_(std::move(executor)),
      config_(std::move(config)),
      observer_(observer),
      max_model_len_(config_.max_model_len > 0 ? config_.max_model_len : model.n_ctx_train),
      kv_(static_cast<int32_t>(executor_->num_blocks()), executor_->kv_layout().block_size,
          config_.enable_prefix_caching, config_.kv_eviction),
      scheduler_(&kv_, config_.limits),
      hub_(static_cast<uint64_t>(SteadyClock::now().time_since_epoch().count()) ^
           (static_cast<uint64_t>(std::random_device{}()) << 32)),
      shared_limits_(config_.limits) {
  copier_ = std::make_unique<ExecutorCopier>(executor_.get());
  kv_.SetCopier(copier_.get(), executor_->kv_layout().bytes_per_block());
  page_format_ = KvPageFormat(executor_->kv_layout());
  if (const int64_t window_blocks = executor_->kv_layout().window_blocks; window_blocks > 0) {
    // The host tier copies whole blocks; a worker chooses one or the other
    // (WorkerServer::Start).
    KVMESH_CHECK(config_.kv_host_memory_bytes == 0 && model.MaxWindow() > 0);
    kv_.EnableWindowPages(static_cast<int32_t>(window_blocks), model.MaxWindow());
    // A sequence alone holds its window's pages and a partly filled block,
    // and a step's chunk takes new ones: the chunk must fit beside them.
    max_window_step_tokens_ = static_cast<int32_t>(
        std::max<int64_t>(0, window_blocks - kv_.WindowSpan() - 2) * kv_.block_size());
  }
  if (config_.kv_host_memory_bytes > 0) {
    kv_.EnableHostTier(config_.kv_host_memory_bytes, executor_->kv_layout().bytes_per_block(),
                       copier_.get());
    if (kv_.host_tier() != nullptr) ProbeRestoreSpeed();
  }
  load_.blocks_total = kv_.pool().num_blocks();
  load_.blocks_free = kv_.pool().num_free();
  if (const BlockPool* window = kv_.window_pool()) load_.window_pages_total = window->num_blocks();
  load_.host_blocks_capacity = kv_.host_tier() ? kv_.host_tier()->capacity() : 0;
}

void Engine::ProbeRestoreSpeed() {
  // Block 0 is free and empty now; copying it out and back leaves it as it was.
  std::vector<uint8_t> bytes(executor_->kv_layout().bytes_per_block());
  constexpr int kCopies = 16;
  const auto t0 = SteadyClock::now();
  for (int i = 0; i < kCopies; ++i) {
    if (!executor_->ReadBlockInto(0, bytes).ok() || !executor_->WriteBlock(0, bytes).ok()) return;
  }
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  // Each round is a spill and a restore; a restore is about half of it.
  if (seconds > 0) probed_restore_tokens_per_s_ = 2.0 * kCopies * kv_.block_size() / seconds;
}

double Engine::RestoreTokensPerSecond() const {
  const KvTierStats& st = kv_.stats();
  if (st.host_hit_blocks >= 8 && st.restore_seconds > 0) {
    return static_cast<double>(st.host_hit_blocks) * kv_.block_size() / st.restore_seconds;
  }
  return probed_restore_tokens_per_s_;
}

Engine::~Engine() { Stop(); }

void Engine::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_thread_ || stopping_) return;
  running_thread_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever is left (also when the loop never started) ends as cancelled.
  DrainInbox();
  std::vector<Request*> left;
  for (auto& [id, r] : requests_) left.push_back(r.get());
  for (Request* r : left) Finish(r, FinishReason::kCancelled, RequestOutput());
  hub_.CloseAll();
  idle_cv_.notify_all();
}

Status Engine::Submit(EngineRequest request) {
  if (request.prompt.empty()) return InvalidArgumentError("the prompt is empty");
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    if (request.prompt[i] < 0 || request.prompt[i] >= model_.n_vocab) {
      return InvalidArgumentError(
          "prompt token " + std::to_string(request.prompt[i]) + " at index " + std::to_string(i) +
          " is outside the vocabulary (0.." + std::to_string(model_.n_vocab - 1) + ")");
    }
  }
  const auto n_prompt = static_cast<int32_t>(request.prompt.size());
  if (n_prompt >= max_model_len_) {
    return InvalidArgumentError("the prompt has " + std::to_string(n_prompt) +
                                " tokens; this worker's context holds at most " +
                                std::to_string(max_model_len_ - 1) + " prompt tokens");
  }
  const int64_t blocks_needed = n_prompt / kv_.block_size() + 1;
  if (blocks_needed > kv_.pool().num_blocks()) {
    return InvalidArgumentError("the prompt needs " + std::to_string(blocks_needed) +
                                " KV blocks; the cache has " +
                                std::to_string(kv_.pool().num_blocks()));
  }
  RETURN_IF_ERROR(request.sampling.Validate());
  if (request.n < 1 || request.n > kMaxChoices) {
    return InvalidArgumentError("n must be in 1.." + std::to_string(kMaxChoices) + ", got " +
                                std::to_string(request.n));
  }
  if (request.top_logprobs < 0 || request.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgumentError("top_logprobs must be in 0.." + std::to_string(kMaxTopLogprobs) +
                                ", got " + std::to_string(request.top_logprobs));
  }
  if (!request.on_output) return InvalidArgumentError("no output callback");
  // The prompt's blocks are hashed once, here on the caller's thread (not
  // on the loop), and the hashes are kept through preemption.
  const BlockHash root = RootHash(config_.model_identity, request.cache_salt);
  std::vector<BlockHash> hashes;
  if (config_.enable_prefix_caching)
    hashes = HashFullBlocks(root, request.prompt, kv_.block_size());
  if (!request.peer_pages.empty()) {
    // Only pages that are exactly this prompt's blocks under this salt.
    const PageCheck check =
        hashes.empty()
            ? PageCheck{}
            : CheckPeerPages(request.peer_pages, hashes, request.prompt, request.peer_first_block,
                             kv_.block_size(), executor_->kv_layout().bytes_per_block());
    request.peer_pages.resize(static_cast<size_t>(check.accepted));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || draining_) return UnavailableError("the worker is shutting down");
    if (active_ids_.count(request.id)) {
      return AlreadyExistsError("request id \"" + request.id + "\" is already in use");
    }
    const int64_t waiting = static_cast<int64_t>(new_requests_.size()) + load_.waiting;
    if (waiting >= shared_limits_.max_waiting) {
      return ResourceExhaustedError("the worker is overloaded: " + std::to_string(waiting) +
                                    " requests are waiting (limit " +
                                    std::to_string(shared_limits_.max_waiting) + ")");
    }
    active_ids_.insert(request.id);
    auto r = std::make_unique<Request>(std::move(request), model_.n_vocab, tokenizer_);
    r->kv.root = root;
    r->kv.hashes = std::move(hashes);
    if (r->spec.n > 1) r->family = std::make_shared<RequestFamily>(RequestFamily{r->spec.id, 1});
    new_requests_.push_back(std::move(r));
  }
  cv_.notify_all();
  return Status::Ok();
}

void Engine::Cancel(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!active_ids_.count(id)) return;
    cancellations_.push_back(id);
  }
  cv_.notify_all();
}

void Engine::BeginDrain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

bool Engine::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [this] { return active_ids_.empty(); });
}

EngineLoad Engine::GetLoad() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineLoad load = load_;
  load.waiting += static_cast<int32_t>(new_requests_.size());
  // The speeds as of now, not as of the last step: an idle worker's samples
  // expire too.
  const auto now = RateTracker::Clock::now();
  load.prefill_tokens_per_s = prefill_rate_.Median(now);
  load.decode_tokens_per_s = decode_rate_.Median(now);
  return load;
}

void Engine::ReleaseOutsideWindow(Request* r) {
  if (r->spec.retain.empty()) {
    kv_.ReleaseOutsideWindow(&r->kv, r->num_computed);
    return;
  }
  std::vector<KvCacheManager::RetainedPrefix> retained;
  for (const EngineRequest::RetainPrefix& span : r->spec.retain) {
    retained.push_back({span.tokens, int64_t{span.seconds} * 1000});
  }
  kv_.ReleaseOutsideWindow(&r->kv, r->num_computed, retained);
}

SchedulerLimits Engine::limits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_limits_;
}

Status Engine::SetLimits(const SchedulerLimits& limits) {
  if (limits.max_tokens_per_step < 1 || limits.max_tokens_per_step > (1 << 20)) {
    return InvalidArgumentError("max_tokens_per_step must be in 1..1048576");
  }
  if (limits.max_running < 1) return InvalidArgumentError("max_running_requests must be >= 1");
  if (limits.max_waiting < 0) return InvalidArgumentError("max_waiting_requests must be >= 0");
  if (max_window_step_tokens_ > 0 && limits.max_tokens_per_step > max_window_step_tokens_) {
    return InvalidArgumentError(
        "max_tokens_per_step must be at most " + std::to_string(max_window_step_tokens_) +
        " with this worker's window pages (a step's chunk must fit beside a sequence's window; "
        "the pool was sized at start from max_tokens_per_step and max_running_requests)");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    shared_limits_ = limits;
  }
  return RunOnLoop([this, limits] { scheduler_.set_limits(limits); });
}

int64_t Engine::ClearCache() {
  int64_t cleared = 0;
  (void)RunOnLoop([this, &cleared] {
    cleared = kv_.ClearCache();
    hub_.Publish(kv_.TakeEvents());
  });
  return cleared;
}

StatusOr<std::vector<KvPage>> Engine::ExportPages(std::vector<BlockHash> hashes, size_t max_bytes) {
  std::vector<KvPage> pages;
  RETURN_IF_ERROR(RunOnLoop([&] {
    pages = kv_.ExportPages(hashes, max_bytes);
    std::lock_guard<std::mutex> lock(mu_);
    load_.tiers = kv_.stats();  // no step may follow soon
  }));
  return pages;
}

Status Engine::RunOnLoop(std::function<void()> fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> fut = done->get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_thread_ || stopping_) {
      return UnavailableError("the engine is not running");
    }
    commands_.push_back({[fn = std::move(fn), done] {
      fn();
      done->set_value();
    }});
  }
  cv_.notify_all();
  fut.wait();
  return Status::Ok();
}

void Engine::DrainInbox() {
  std::vector<std::unique_ptr<Request>> fresh;
  std::vector<std::string> cancels;
  std::vector<Command> commands;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh.swap(new_requests_);
    cancels.swap(cancellations_);
    commands.swap(commands_);
  }
  for (auto& r : fresh) {
    Request* raw = r.get();
    if (!raw->spec.peer_pages.empty()) {
      kv_.ImportPages(raw->kv.hashes, raw->tokens, raw->spec.peer_first_block,
                      raw->spec.peer_pages);
      std::vector<KvPage>().swap(raw->spec.peer_pages);  // their bytes are in the cache now
    }
    requests_[raw->spec.id] = std::move(r);
    scheduler_.AddWaiting(raw);
  }
  for (const std::string& id : cancels) {
    auto it = requests_.find(id);
    if (it != requests_.end() && !it->second->family) {
      it->second->cancel_requested = true;
      continue;
    }
    for (auto& [rid, r] : requests_) {  // every choice of the request
      if (r->family_id() == id) r->cancel_requested = true;
    }
  }
  for (Command& c : commands) c.run();
}

void Engine::ExpireRequests() {
  const auto now = SteadyClock::now();
  std::vector<std::pair<Request*, FinishReason>> ended;
  for (auto& [id, r] : requests_) {
    if (r->cancel_requested) {
      ended.push_back({r.get(), FinishReason::kCancelled});
    } else if (r->spec.deadline && now >= *r->spec.deadline) {
      ended.push_back({r.get(), FinishReason::kDeadline});
    }
  }
  for (auto& [r, reason] : ended) Finish(r, reason, RequestOutput());
}

void Engine::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] {
        return stopping_ || !new_requests_.empty() || !cancellations_.empty() ||
               !commands_.empty() || !requests_.empty();
      });
      if (stopping_) return;
    }
    DrainInbox();
    ExpireRequests();
    if (!Step()) {
      // Nothing could be scheduled (e.g. all waiting for blocks that will
      // never free): avoid spinning.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(5));
    }
  }
}

bool Engine::Step() {
  const auto t0 = SteadyClock::now();
  ScheduleOutput out = scheduler_.Schedule();
  for (size_t i = 0; i < out.preempted.size(); ++i) {
    if (observer_) observer_->OnPreemption();
  }
  for (Request* r : out.unfittable) {
    if (r->num_generated() > 0) {
      Finish(r, FinishReason::kContext, RequestOutput());
    } else {
      Finish(r, FinishReason::kError, RequestOutput(),
             ResourceExhaustedError("the request does not fit in the KV cache (" +
                                    std::to_string(kv_.pool().num_blocks()) + " blocks of " +
                                    std::to_string(kv_.block_size()) + " tokens)"));
    }
  }
  if (out.chunks.empty()) {
    kv_.EndStep();
    hub_.Publish(kv_.TakeEvents());
    PublishLoad(0, 0, 0);
    return !out.unfittable.empty();
  }

  ForwardBatch batch;
  batch.tokens.reserve(out.num_tokens);
  int32_t prefill_tokens = 0, decode_tokens = 0;
  for (const ScheduledChunk& c : out.chunks) {
    Request* r = c.request;
    if (!r->first_scheduled) r->first_scheduled = t0;
    SequenceChunk seq;
    seq.first_token = static_cast<int64_t>(batch.tokens.size());
    seq.num_tokens = c.num_tokens;
    seq.start_pos = r->num_computed;
    seq.block_table = r->kv.table;
    seq.window_table = r->kv.window_table;
    // Scoring the prompt needs every position's logits.
    const bool score_prompt = r->wants_prompt_logprobs() && r->num_computed < r->num_prompt_tokens;
    seq.logits = score_prompt ? LogitsMode::kAll : c.sample ? LogitsMode::kLast : LogitsMode::kNone;
    batch.tokens.insert(batch.tokens.end(), r->tokens.begin() + r->num_computed,
                        r->tokens.begin() + r->num_computed + c.num_tokens);
    batch.sequences.push_back(seq);
    (r->num_computed < r->num_prompt_tokens ? prefill_tokens : decode_tokens) += c.num_tokens;
  }
  ForwardOutput fo;
  const Status status = executor_->Forward(batch, &fo);
  if (const int64_t delay = step_delay_ms_.load(); delay > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }
  kv_.EndStep();  // the forward pass waited for the host tier's copies
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const ScheduledChunk& c = out.chunks[i];
    Request* r = c.request;
    if (!status.ok()) {
      Finish(r, FinishReason::kError, RequestOutput(), status.WithPrefix("forward pass"));
      continue;
    }
    const SequenceChunk& seq = batch.sequences[i];
    r->num_computed += c.num_tokens;
    kv_.CommitComputed(&r->kv, r->tokens, r->num_computed);
    if (kv_.window_pages()) ReleaseOutsideWindow(r);
    int64_t last_row = fo.first_row[i];
    if (seq.logits == LogitsMode::kAll) {
      ScorePrompt(r, fo, fo.first_row[i], seq.start_pos, c.num_tokens);
      last_row += c.num_tokens - 1;
    }
    if (c.sample) {
      SampleAndStream(r, fo.Row(last_row));
    } else if (r->spec.report_prefill_progress && r->num_generated() == 0) {
      RequestOutput progress;
      progress.prompt_tokens_computed = r->num_computed;
      r->spec.on_output(std::move(progress));
    }
  }
  hub_.Publish(kv_.TakeEvents());
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  ++steps_;
  if (observer_) observer_->OnStep(prefill_tokens, decode_tokens, seconds);
  PublishLoad(seconds, prefill_tokens, decode_tokens);
  return true;
}

void Engine::ScorePrompt(Request* r, const ForwardOutput& fo, int64_t first_row, int32_t start_pos,
                         int32_t num_tokens) {
  // Row j predicts the token at position start_pos + j + 1. Positions scored
  // before (a prefill redone after preemption) are skipped.
  for (int32_t j = 0; j < num_tokens; ++j) {
    const int32_t q = start_pos + j + 1;
    if (q >= r->num_prompt_tokens) break;
    if (q != static_cast<int32_t>(r->prompt_logprobs.size()) + 1) continue;
    r->prompt_logprobs.push_back(
        scorer_.Score(fo.Row(first_row + j), model_.n_vocab, r->tokens[q], r->spec.top_logprobs));
  }
}

void Engine::TakePromptLogprobs(Request* r, RequestOutput* out) {
  if (!r->spec.prompt_logprobs || r->prompt_logprobs_sent) return;
  out->prompt_logprobs = std::move(r->prompt_logprobs);
  r->prompt_logprobs.clear();
  r->prompt_logprobs_sent = true;
}

std::vector<Request*> Engine::ForkChoices(Request* r) {
  r->forked = true;
  std::vector<Request*> forked;
  for (int32_t i = 1; i < r->spec.n; ++i) {
    EngineRequest spec = r->spec;
    spec.n = 1;
    spec.prompt_logprobs = false;
    spec.report_prefill_progress = false;
    spec.retain.clear();  // the first choice keeps the prompt
    if (spec.sampling.seed) spec.sampling.seed = *spec.sampling.seed + i;
    spec.id = r->spec.id + "#" + std::to_string(i);
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (active_ids_.count(spec.id)) spec.id += "#";
      active_ids_.insert(spec.id);
    }
    auto owned = std::make_unique<Request>(std::move(spec), model_.n_vocab, tokenizer_);
    Request* c = owned.get();
    c->choice = i;
    c->family = r->family;
    ++r->family->open;
    c->forked = true;
    c->arrival = r->arrival;
    c->first_scheduled = r->first_scheduled;
    c->kv.root = r->kv.root;
    requests_[c->spec.id] = std::move(owned);
    int32_t from = -1, to = -1;
    bool shared = kv_.Fork(r->kv, r->num_computed, &c->kv, &from, &to);
    if (shared && from >= 0) {
      shared = executor_->ReadBlock(from, &block_copy_).ok() &&
               executor_->WriteBlock(to, block_copy_).ok();
      if (!shared) kv_.Release(&c->kv);
    }
    if (!shared) {
      // No block for the copy: this choice computes the prompt again (its
      // full blocks come from the prefix cache).
      scheduler_.AddWaiting(c);
      continue;
    }
    c->num_computed = r->num_computed;
    c->num_cached_tokens = c->num_prompt_tokens;  // all of it shared
    scheduler_.AddRunning(c);
    forked.push_back(c);
  }
  return forked;
}

void Engine::SampleAndStream(Request* r, const float* logits) {
  // Choice 0 samples first (its first output carries the prompt logprobs),
  // then the choices forked from it, from the same logits.
  std::vector<Request*> forked;
  if (r->spec.n > 1 && !r->forked) forked = ForkChoices(r);
  SampleOne(r, logits);
  for (Request* c : forked) SampleOne(c, logits);
}

void Engine::SampleOne(Request* r, const float* logits) {
  const SamplingParams& sp = r->spec.sampling;
  const auto now = SteadyClock::now();
  const float* raw_logits = logits;  // what logprobs are computed from
  if (sp.max_tokens == 0) {          // prefill only (e.g. warming the prefix cache)
    Finish(r, FinishReason::kLength, RequestOutput());
    return;
  }
  if (r->matcher) {
    // Only the tokens the grammar allows from here (the end only where it
    // accepts); the mask comes from the grammar's shared cache.
    const bool any =
        MaskLogits(*r->spec.constraint, *r->matcher, logits, model_.n_vocab, &masked_logits_);
    if (!any) {  // the vocabulary cannot continue the grammar
      Finish(r, FinishReason::kError, RequestOutput(),
             InvalidArgumentError("no token of the vocabulary continues the grammar here (after " +
                                  std::to_string(r->num_generated()) + " generated tokens)"));
      return;
    }
    logits = masked_logits_.data();
  }
  const int32_t token = r->sampler.Sample(logits, r->tokens);
  if (r->matcher && !tokenizer_.IsEndOfGeneration(token)) {
    r->matcher->Accept(r->spec.constraint->vocabulary->piece(token));
  }
  if (!r->first_token) {
    r->first_token = now;
    if (observer_) observer_->OnFirstToken(Ms(now - r->arrival) / 1e3);
  }
  if (!sp.ignore_eos && tokenizer_.IsEndOfGeneration(token)) {
    Finish(r, FinishReason::kStop, RequestOutput());
    return;
  }
  r->tokens.push_back(token);
  RequestOutput delta;
  delta.choice = r->choice;
  delta.tokens.push_back(token);
  if (r->spec.logprobs) {
    delta.logprobs.push_back(
        scorer_.Score(raw_logits, model_.n_vocab, token, r->spec.top_logprobs));
  }
  TakePromptLogprobs(r, &delta);
  delta.text = r->stop_matcher.Push(r->detokenizer.Feed(token));
  if (r->stop_matcher.stopped()) {
    Finish(r, FinishReason::kStop, std::move(delta));
  } else if (r->num_generated() >= sp.max_tokens) {
    Finish(r, FinishReason::kLength, std::move(delta));
  } else if (static_cast<int32_t>(r->tokens.size()) >= max_model_len_) {
    Finish(r, FinishReason::kContext, std::move(delta));
  } else {
    r->spec.on_output(std::move(delta));
  }
}

void Engine::Finish(Request* r, FinishReason reason, RequestOutput pending, Status error) {
  const auto now = SteadyClock::now();
  RequestOutput out = std::move(pending);
  if (!r->stop_matcher.stopped() && reason != FinishReason::kError) {
    out.text += r->stop_matcher.Push(r->detokenizer.Flush());
    if (!r->stop_matcher.stopped()) out.text += r->stop_matcher.Flush();
  }
  out.finished = true;
  out.finish_reason = reason;
  out.choice = r->choice;
  if (reason != FinishReason::kError) TakePromptLogprobs(r, &out);
  const std::shared_ptr<RequestFamily> family = r->family;
  const bool family_done = !family || --family->open == 0;
  out.last_of_request = family_done;
  if (r->stop_matcher.stopped()) out.stop_sequence = r->stop_matcher.matched();
  out.error = std::move(error);
  out.prompt_tokens = r->num_prompt_tokens;
  out.cached_tokens = std::max(0, r->num_cached_tokens);
  out.completion_tokens = r->num_generated();
  out.queue_ms = r->first_scheduled ? Ms(*r->first_scheduled - r->arrival) : Ms(now - r->arrival);
  out.ttft_ms = r->first_token ? Ms(*r->first_token - r->arrival) : 0.0;
  out.total_ms = Ms(now - r->arrival);
  out.seed = r->sampler.seed();
  double tpot = 0;
  if (r->first_token && out.completion_tokens > 1) {
    tpot = Ms(now - *r->first_token) / 1e3 / (out.completion_tokens - 1);
  }
  if (observer_) observer_->OnRequestFinished(out, tpot);
  r->spec.on_output(std::move(out));
  for (const EngineRequest::RetainPrefix& span : r->spec.retain) {
    kv_.Retain(r->kv, std::min(span.tokens, r->num_computed), int64_t{span.seconds} * 1000);
  }
  scheduler_.Remove(r);
  const std::string id = r->spec.id;
  requests_.erase(id);                          // destroys r
  if (requests_.empty()) PublishLoad(0, 0, 0);  // idle: waiters see the final load
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A request's id stays in use until its last choice ends.
    if (!family || id != family->id) active_ids_.erase(id);
    if (family && family_done) active_ids_.erase(family->id);
    if (active_ids_.empty()) idle_cv_.notify_all();
  }
}

void Engine::PublishLoad(double step_seconds, int32_t prefill_tokens, int32_t decode_tokens) {
  EngineLoad load;
  load.running = static_cast<int32_t>(scheduler_.running().size());
  load.waiting = static_cast<int32_t>(scheduler_.waiting().size());
  load.blocks_total = kv_.pool().num_blocks();
  load.blocks_used = kv_.pool().num_used();
  load.blocks_free = kv_.pool().num_free();
  load.blocks_cached = kv_.pool().num_free_cached();
  load.blocks_retained = kv_.pool().num_free_retained();
  load.blocks_reused = kv_.pool().num_cached_reused();
  load.kv_refill_ratio = kv_.pool().refill_ratio();
  if (kv_.pool().eviction() == KvEviction::kAdaptive) {
    load.eviction_head_start = kv_.pool().adaptive_head_start();
  }
  if (const BlockPool* window = kv_.window_pool()) {
    load.window_pages_total = window->num_blocks();
    load.window_pages_used = window->num_used();
  }
  size_t looked = 0;
  for (Request* r : scheduler_.waiting()) {
    int32_t cached = 0;
    if (looked++ < kAdmissionLookahead && r->num_computed == 0 && !r->wants_prompt_logprobs()) {
      cached = kv_.FindCachedPrefix(&r->kv, r->tokens).num_tokens();
    }
    load.queued_prefill_tokens += std::max(0, r->num_uncomputed() - cached);
  }
  load.max_tokens_per_step = scheduler_.limits().max_tokens_per_step;
  for (const Request* r : scheduler_.running()) {
    if (r->num_computed < r->num_prompt_tokens) load.queued_prefill_tokens += r->num_uncomputed();
  }
  load.steps = steps_;
  load.preemptions = scheduler_.num_preemptions();
  if (const HostKvTier* host = kv_.host_tier()) {
    load.host_blocks = host->size();
    load.host_blocks_capacity = host->capacity();
    load.host_restore_tokens_per_s = RestoreTokensPerSecond();
  }
  load.tiers = kv_.stats();
  // The speeds of steps that did that kind of work (GetLoad takes their
  // medians). Only sizeable prefills say how fast this worker prefills: a
  // step of a few tokens is mostly fixed per-step cost, and a worker serving
  // cache hits (small prefills) must not look slow for it.
  const auto now = RateTracker::Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (step_seconds > 0 && prefill_tokens >= 64) {
    prefill_rate_.Add(prefill_tokens / step_seconds, now);
    load.last_prefill_tokens_per_s = prefill_rate_.Median(now);
  } else {
    load.last_prefill_tokens_per_s = load_.last_prefill_tokens_per_s;
  }
  if (step_seconds > 0 && decode_tokens > 0) decode_rate_.Add(decode_tokens / step_seconds, now);
  load_ = load;
}

}  // namespace kvmesh
