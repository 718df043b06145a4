// WorkerMetrics: the worker's Prometheus metrics (names kvmesh_worker_*).
//
// Counters and histograms are fed by the engine through EngineObserver (on
// the engine thread; prometheus-cpp metrics are thread-safe); gauges of the
// current load are read from a callback at scrape time, so they are never
// stale. Render() produces the text exposition format for /metrics.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker/engine/engine.h"
#include "worker/engine/rate_tracker.h"

namespace kvmesh {

// One device of the worker's parallel plan, as /metrics reports it.
struct DeviceMetric {
  std::string device;  // "cpu:0"
  std::string split;   // "none", "layer" or "tensor"
  int layers = 0;
  int kv_heads = 0;
  int threads = 0;
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes = 0;
  double collective_seconds = 0.0;
};

// The fetch speed a peer fetch that brought no pages counts as, in prompt
// tokens per second (Load.peer_fetch_tokens_per_s is the median; 0 there
// means "not measured", so a failure counts as the slowest nonzero speed).
inline constexpr double kNothingFetchedTokensPerS = 1.0;

class WorkerMetrics : public EngineObserver {
 public:
  // Series carry no worker label: Prometheus adds the scrape target's
  // `instance` label, which names the worker.
  WorkerMetrics();

  // Where the load gauges come from (the engine, once it exists).
  void SetLoadSource(std::function<EngineLoad()> source) { load_source_ = std::move(source); }
  // Where the per-device series come from (called at scrape time, from the
  // HTTP thread: the source must be safe to call there).
  void SetDeviceSource(std::function<std::vector<DeviceMetric>()> source) {
    device_source_ = std::move(source);
  }

  void OnRequestFinished(const RequestOutput& final_output, double tpot_seconds) override;
  void OnFirstToken(double ttft_seconds) override;
  void OnStep(int32_t prefill_tokens, int32_t decode_tokens, double seconds) override;
  void OnPreemption() override;

  // A request refused before it reached the engine, by gRPC status name.
  void OnRejected(const std::string& code);
  // The router's prediction of cached prompt tokens against the truth.
  void OnPrediction(int32_t predicted, int32_t actual);

  // A peer prefix fetch: its result (ok, partial, rejected, failed), the
  // prompt tokens and page bytes taken, how long it took and the prefill
  // time it saved (estimated at the measured prefill speed, less the fetch).
  // A fetch that took no tokens adds a fetch-speed sample of
  // kNothingFetchedTokensPerS. Thread-safe.
  void OnPeerFetch(const std::string& result, int64_t tokens, int64_t bytes, double seconds,
                   double saved_seconds);
  // Pages sent to a peer.
  void OnPeerExport(int64_t pages, int64_t bytes);
  // Median speed of the last fetches that took pages, within 5 minutes, in
  // tokens per second (0 when there is none); reported in Load.
  double peer_fetch_tokens_per_s() const;

  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Histogram* ttft_;
  prometheus::Histogram* tpot_;
  prometheus::Histogram* step_seconds_;
  prometheus::Histogram* step_tokens_;
  prometheus::Histogram* request_seconds_;
  prometheus::Counter* prompt_tokens_;
  prometheus::Counter* cached_tokens_;
  prometheus::Counter* generated_tokens_;
  prometheus::Counter* prefill_tokens_;
  prometheus::Counter* preemptions_;
  prometheus::Counter* predicted_cached_;
  prometheus::Counter* predicted_actual_cached_;
  prometheus::Histogram* prediction_error_;
  prometheus::Family<prometheus::Counter>* peer_fetches_;
  prometheus::Family<prometheus::Counter>* peer_bytes_;
  prometheus::Counter* peer_fetch_tokens_;
  prometheus::Counter* peer_fetch_seconds_;
  prometheus::Counter* peer_saved_seconds_;
  prometheus::Counter* peer_exported_pages_;
  mutable std::mutex peer_mu_;
  RateTracker peer_rate_;  // guarded by peer_mu_
  std::function<EngineLoad()> load_source_;
  std::function<std::vector<DeviceMetric>()> device_source_;
};

}  // namespace kvmesh
