// Engine: one model's continuous-batching loop.
//
// One thread (the loop) owns the scheduler, the KV cache manager, every
// Request and the executor; each step it schedules, runs the whole step's
// batch through the executor in one forward pass (so each weight matrix is
// read once per step, not once per sequence), samples, streams outputs and
// publishes KV events. Other threads talk to it only through thread-safe
// calls that queue work for the loop (Submit, Cancel, SetLimits, ClearCache)
// or read published snapshots (GetLoad, kv_events()), so callers never block
// the loop and the loop never waits on a caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/kv_event_hub.h"
#include "worker/engine/rate_tracker.h"
#include "worker/engine/request.h"
#include "worker/engine/scheduler.h"
#include "worker/kv/kv_cache_manager.h"
#include "worker/model/model_config.h"
#include "worker/runtime/executor.h"

namespace kvmesh {

// The most choices one request may ask for (EngineRequest::n).
inline constexpr int32_t kMaxChoices = 16;

struct EngineConfig {
  SchedulerLimits limits;
  int32_t max_model_len = 0;  // tokens per sequence; 0 = the model's training context
  bool enable_prefix_caching = true;
  // Which free KV block is evicted first (worker/kv/block_pool.h).
  KvEviction kv_eviction = KvEviction::kLru;
  std::string model_identity;  // roots the block hashes (Model::identity())
  // Host-RAM tier of the KV cache (worker/kv/host_kv_tier.h); 0: none.
  int64_t kv_host_memory_bytes = 0;
};

// A snapshot of the engine's load, refreshed every step.
struct EngineLoad {
  int32_t running = 0;
  int32_t waiting = 0;
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;
  int64_t blocks_free = 0;
  int64_t blocks_cached = 0;       // free blocks still holding a cached prefix
  int64_t blocks_retained = 0;     // free blocks kept by a cache_control retention
  int64_t window_pages_total = 0;  // with window pages (KvLayout::window_blocks); else 0
  int64_t window_pages_used = 0;
  int64_t blocks_reused = 0;  // cached blocks a later request reused (in use or free)
  // With --kv-eviction adaptive, the head start reused blocks have (in
  // blocks stored; BlockPool::adaptive_head_start); -1 under least recently
  // used.
  int64_t eviction_head_start = -1;
  // Of the blocks the pool stored lately, the share it had evicted shortly
  // before (BlockPool::refill_ratio).
  double kv_refill_ratio = 0;
  // Prompt tokens still to compute: the running requests', and the waiting
  // ones' less the cached prefix of the first kAdmissionLookahead (which
  // cache-first admission reads; later ones count in full).
  int64_t queued_prefill_tokens = 0;
  int32_t max_tokens_per_step = 0;  // the scheduler's step budget
  // Recent rates: medians of the last 16 steps that did such work within
  // the last 5 minutes (RateTracker); 0 when none did.
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  // The prefill rate when last measured, however long ago (what a peer
  // fetch saved is priced at it); 0 before the first.
  double last_prefill_tokens_per_s = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t host_blocks = 0;           // blocks held by the host tier
  int64_t host_blocks_capacity = 0;  // 0: no host tier
  // Measured speed of restoring host blocks, in tokens per second (a copy at
  // start, then every restore); 0 without a host tier.
  double host_restore_tokens_per_s = 0;
  KvTierStats tiers;  // cumulative
};

// Hooks for metrics; called on the engine loop thread, must be cheap.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void OnRequestFinished(const RequestOutput& final_output, double tpot_seconds) {}
  virtual void OnFirstToken(double ttft_seconds) {}
  virtual void OnStep(int32_t prefill_tokens, int32_t decode_tokens, double seconds) {}
  virtual void OnPreemption() {}
};

class Engine {
 public:
  // `tokenizer` and `executor` are used only by the loop; the tokenizer must
  // outlive the engine.
  Engine(const ModelConfig& model, const Tokenizer& tokenizer, std::unique_ptr<Executor> executor,
         EngineConfig config, EngineObserver* observer = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void Start();
  // Ends every request still queued or running (kCancelled) and joins.
  void Stop();

  // Queues a request. Errors (nothing is queued): INVALID_ARGUMENT for an
  // empty or too long prompt, token ids outside the vocabulary, bad
  // sampling values; ALREADY_EXISTS for an id in use; RESOURCE_EXHAUSTED when
  // the waiting queue is full; UNAVAILABLE while draining or stopped.
  Status Submit(EngineRequest request);
  // Ends a request (kCancelled) and frees its blocks at the next step.
  void Cancel(const std::string& id);

  // Stop accepting requests (Submit → UNAVAILABLE); running ones continue.
  void BeginDrain();
  // Waits until no request is queued or running, or the timeout passes.
  bool WaitIdle(std::chrono::milliseconds timeout);

  EngineLoad GetLoad() const;
  SchedulerLimits limits() const;
  Status SetLimits(const SchedulerLimits& limits);
  // Drops every cached prefix; returns how many hashes were dropped.
  int64_t ClearCache();
  // Fault injection (WorkerAdmin.InjectFault): every step that computes
  // takes `delay` longer, as on a slow or overloaded device. Any thread.
  void SetStepDelay(std::chrono::milliseconds delay) { step_delay_ms_ = delay.count(); }
  std::chrono::milliseconds step_delay() const {
    return std::chrono::milliseconds(step_delay_ms_.load());
  }
  // The leading run of `hashes` this engine has cached (either tier), as
  // pages for a peer, within `max_bytes`; read between two steps.
  StatusOr<std::vector<KvPage>> ExportPages(std::vector<BlockHash> hashes, size_t max_bytes);
  // What a peer's pages must match to be imported here (KvPageFormat).
  const std::string& page_format() const { return page_format_; }
  // Whether the sliding-window layers keep window pages (KvLayout::
  // window_blocks): pages then cannot be exported or imported.
  bool window_pages() const { return executor_->kv_layout().window_blocks > 0; }
  size_t block_bytes() const { return executor_->kv_layout().bytes_per_block(); }

  KvEventHub& kv_events() { return hub_; }
  uint64_t epoch() const { return hub_.epoch(); }
  int32_t max_model_len() const { return max_model_len_; }
  int32_t block_size() const { return kv_.block_size(); }
  int64_t num_blocks() const { return kv_.pool().num_blocks(); }
  BlockHash hash_root() const { return RootHash(config_.model_identity); }

 private:
  struct Command {
    std::function<void()> run;
  };

  void Loop();
  void DrainInbox();
  void ExpireRequests();
  bool Step();
  void SampleAndStream(Request* r, const float* logits);
  // Scores prompt tokens predicted by rows first_row … of a kAll chunk.
  void ScorePrompt(Request* r, const ForwardOutput& fo, int64_t first_row, int32_t start_pos,
                   int32_t num_tokens);
  void TakePromptLogprobs(Request* r, RequestOutput* out);
  // Samples the next token of `r` and streams it (or finishes `r`).
  void SampleOne(Request* r, const float* logits);
  // Starts choices 1 … n-1 of `r`, whose prompt is computed: they share its
  // KV pages (and sample their first token from its logits). Returns those
  // that run now; the others wait to compute their prompt again.
  std::vector<Request*> ForkChoices(Request* r);
  void Finish(Request* r, FinishReason reason, RequestOutput pending, Status error = Status::Ok());
  void PublishLoad(double step_seconds, int32_t prefill_tokens, int32_t decode_tokens);
  // Times a few block copies through the host tier's path, so the restore
  // speed is known before the first restore.
  void ProbeRestoreSpeed();
  // With window pages: gives back r's pages its window has passed, keeping
  // the window tails of the prefixes it retains.
  void ReleaseOutsideWindow(Request* r);
  double RestoreTokensPerSecond() const;
  Status RunOnLoop(std::function<void()> fn);

  const ModelConfig& model_;
  const Tokenizer& tokenizer_;
  std::unique_ptr<Executor> executor_;
  EngineConfig config_;
  EngineObserver* observer_;
  int32_t max_model_len_;

  // Loop-thread state.
  KvCacheManager kv_;
  Scheduler scheduler_;
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;
  int64_t steps_ = 0;
  std::vector<float> masked_logits_;  // a constrained request's logits after its mask
  LogprobScorer scorer_;
  std::vector<uint8_t> block_copy_;        // a KV block being copied for a fork
  std::unique_ptr<KvBlockCopier> copier_;  // the executor, for the host tier and peers
  std::string page_format_;
  int32_t max_window_step_tokens_ = 0;  // with window pages: SetLimits' cap
  double probed_restore_tokens_per_s_ = 0;

  KvEventHub hub_;

  // Inbox, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::vector<std::unique_ptr<Request>> new_requests_;
  std::vector<std::string> cancellations_;
  std::vector<Command> commands_;
  std::unordered_set<std::string> active_ids_;
  bool stopping_ = false;
  bool draining_ = false;
  bool running_thread_ = false;
  SchedulerLimits shared_limits_;
  EngineLoad load_;  // as of the last step, but for the speeds (GetLoad)
  // Measured speeds: added by the loop, read by GetLoad at the time asked.
  RateTracker prefill_rate_;
  RateTracker decode_rate_;

  std::thread thread_;
  std::atomic<int64_t> step_delay_ms_{0};  // fault injection
};

}  // namespace kvmesh
