#include "worker/service/worker_metrics.h"

#include <prometheus/text_serializer.h>

#include <cmath>
#include <sstream>

namespace kvmesh {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Latency buckets from 5 ms to 60 s.
Histogram::BucketBoundaries LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

prometheus::MetricFamily Gauge(const std::string& name, const std::string& help,
                               std::vector<std::pair<std::string, double>> by_state = {},
                               double value = 0) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  if (by_state.empty()) {
    prometheus::ClientMetric m;
    m.gauge.value = value;
    f.metric.push_back(m);
  }
  for (auto& [state, v] : by_state) {
    prometheus::ClientMetric m;
    m.label = {{"state", state}};
    m.gauge.value = v;
    f.metric.push_back(m);
  }
  return f;
}

// A family of series given by their labels.
prometheus::MetricFamily Labelled(
    const std::string& name, const std::string& help, prometheus::MetricType type,
    std::vector<std::pair<std::vector<prometheus::ClientMetric::Label>, double>> series) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  for (auto& [labels, v] : series) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    if (type == prometheus::MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    f.metric.push_back(std::move(m));
  }
  return f;
}

// The KV tiers' gauges and counters, from the engine's cumulative counts.
void AddTierFamilies(const EngineLoad& load, std::vector<prometheus::MetricFamily>* families) {
  using prometheus::MetricType;
  const KvTierStats& t = load.tiers;
  families->push_back(Labelled(
      "kvmesh_worker_kv_tier_blocks",
      "KV blocks by tier: device = used + free holding a cached prefix, host = held in host RAM",
      MetricType::Gauge,
      {{{{"tier", "device"}}, static_cast<double>(load.blocks_used + load.blocks_cached)},
       {{{"tier", "host"}}, static_cast<double>(load.host_blocks)}}));
  families->push_back(Labelled(
      "kvmesh_worker_kv_tier_capacity_blocks", "KV blocks each tier can hold", MetricType::Gauge,
      {{{{"tier", "device"}}, static_cast<double>(load.blocks_total)},
       {{{"tier", "host"}}, static_cast<double>(load.host_blocks_capacity)}}));
  families->push_back(Labelled("kvmesh_worker_kv_hit_blocks_total",
                               "Prompt blocks reused from the cache, by the tier they came from",
                               MetricType::Counter,
                               {{{{"tier", "device"}}, static_cast<double>(t.device_hit_blocks)},
                                {{{"tier", "host"}}, static_cast<double>(t.host_hit_blocks)}}));
  families->push_back(
      Labelled("kvmesh_worker_kv_tier_copy_bytes_total",
               "Bytes copied between tiers: spill = device to host, restore = host to device",
               MetricType::Counter,
               {{{{"direction", "spill"}}, static_cast<double>(t.spilled_bytes)},
                {{{"direction", "restore"}}, static_cast<double>(t.restored_bytes)}}));
  families->push_back(Labelled("kvmesh_worker_kv_tier_copy_seconds_total",
                               "Time spent copying between tiers (divide by blocks for latency)",
                               MetricType::Counter,
                               {{{{"direction", "spill"}}, t.spill_seconds},
                                {{{"direction", "restore"}}, t.restore_seconds}}));
  families->push_back(Labelled(
      "kvmesh_worker_kv_tier_copy_blocks_total", "Blocks copied between tiers", MetricType::Counter,
      {{{{"direction", "spill"}}, static_cast<double>(t.spilled_blocks)},
       {{{"direction", "restore"}}, static_cast<double>(t.host_hit_blocks)}}));
  families->push_back(
      Labelled("kvmesh_worker_kv_tier_lost_blocks_total",
               "Evicted blocks not kept: dropped (no host slot free) or failed (a copy failed)",
               MetricType::Counter,
               {{{{"reason", "dropped"}}, static_cast<double>(t.dropped_spills)},
                {{{"reason", "failed"}}, static_cast<double>(t.failed_copies)}}));
  families->push_back(Labelled("kvmesh_worker_kv_restore_tokens_per_second",
                               "Measured speed of restoring cached tokens from the host tier",
                               MetricType::Gauge, {{{}, load.host_restore_tokens_per_s}}));
}

// One series per device, labelled with its name (and the split).
prometheus::MetricFamily DeviceFamily(const std::string& name, const std::string& help,
                                      prometheus::MetricType type,
                                      const std::vector<DeviceMetric>& devices,
                                      double (*value)(const DeviceMetric&)) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  for (const DeviceMetric& d : devices) {
    prometheus::ClientMetric m;
    m.label = {{"device", d.device}, {"split", d.split}};
    if (type == prometheus::MetricType::Counter) {
      m.counter.value = value(d);
    } else {
      m.gauge.value = value(d);
    }
    f.metric.push_back(m);
  }
  return f;
}

}  // namespace

WorkerMetrics::WorkerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  requests_ = &BuildCounter()
                   .Name("kvmesh_worker_requests_total")
                   .Help(
                       "Requests by outcome (length, stop, cancelled, context, deadline, error, "
                       "rejected_*)")
                   .Register(*registry_);
  ttft_ = &BuildHistogram()
               .Name("kvmesh_worker_time_to_first_token_seconds")
               .Help("Time from arrival to the first generated token")
               .Register(*registry_)
               .Add({}, LatencyBuckets());
  tpot_ = &BuildHistogram()
               .Name("kvmesh_worker_time_per_output_token_seconds")
               .Help("Mean time between generated tokens of a request, after the first")
               .Register(*registry_)
               .Add({}, Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                    0.25, 0.5, 1});
  step_seconds_ = &BuildHistogram()
                       .Name("kvmesh_worker_step_seconds")
                       .Help("Duration of one engine step (one batched forward pass)")
                       .Register(*registry_)
                       .Add({}, Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                            0.1, 0.25, 0.5, 1, 2.5});
  step_tokens_ = &BuildHistogram()
                      .Name("kvmesh_worker_step_tokens")
                      .Help(
                          "Tokens computed in one engine step (the batch: prefill chunks plus "
                          "one per decoding sequence)")
                      .Register(*registry_)
                      .Add({}, Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256, 512,
                                                           1024, 2048, 4096});
  request_seconds_ = &BuildHistogram()
                          .Name("kvmesh_worker_request_duration_seconds")
                          .Help("Time from arrival to the end of a finished request")
                          .Register(*registry_)
                          .Add({}, Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                               2.5, 5, 10, 30, 60, 120, 300});
  auto counter = [&](const std::string& name, const std::string& help) {
    return &BuildCounter().Name(name).Help(help).Register(*registry_).Add({});
  };
  prompt_tokens_ =
      counter("kvmesh_worker_prompt_tokens_total", "Prompt tokens of finished requests");
  cached_tokens_ = counter("kvmesh_worker_prefix_hit_tokens_total",
                           "Prompt tokens served from the prefix cache instead of computed");
  generated_tokens_ = counter("kvmesh_worker_generated_tokens_total", "Tokens generated");
  prefill_tokens_ = counter("kvmesh_worker_prefill_tokens_total", "Prompt tokens computed");
  preemptions_ =
      counter("kvmesh_worker_preemptions_total",
              "Requests preempted (blocks freed, recomputed later) for lack of KV blocks");
  predicted_cached_ =
      counter("kvmesh_worker_router_predicted_cached_tokens_total",
              "Cached prompt tokens the router predicted for requests it sent here");
  predicted_actual_cached_ =
      counter("kvmesh_worker_router_predicted_requests_cached_tokens_total",
              "Cached prompt tokens actually found, for the requests that carried a prediction");
  prediction_error_ = &BuildHistogram()
                           .Name("kvmesh_worker_router_prediction_error_tokens")
                           .Help("|predicted - actual| cached prompt tokens per request")
                           .Register(*registry_)
                           .Add({}, Histogram::BucketBoundaries{0, 16, 64, 256, 1024, 4096});
  peer_fetches_ = &BuildCounter()
                       .Name("kvmesh_worker_peer_fetches_total")
                       .Help(
                           "Peer prefix fetches by result: ok, partial (the peer held fewer "
                           "blocks), rejected (a page did not match the prompt), failed")
                       .Register(*registry_);
  peer_bytes_ = &BuildCounter()
                     .Name("kvmesh_worker_peer_page_bytes_total")
                     .Help("KV page bytes moved between workers: in = fetched, out = served")
                     .Register(*registry_);
  // Every label value at 0 from the start, so that rates and alerts see
  // "none yet" rather than no series.
  for (const char* result : {"ok", "partial", "rejected", "failed"})
    peer_fetches_->Add({{"result", result}});
  for (const char* direction : {"in", "out"}) peer_bytes_->Add({{"direction", direction}});
  peer_fetch_tokens_ = &BuildCounter()
                            .Name("kvmesh_worker_peer_fetch_tokens_total")
                            .Help("Prompt tokens whose KV pages were fetched from a peer")
                            .Register(*registry_)
                            .Add({});
  peer_fetch_seconds_ = &BuildCounter()
                             .Name("kvmesh_worker_peer_fetch_seconds_total")
                             .Help("Time spent fetching KV pages from peers")
                             .Register(*registry_)
                             .Add({});
  peer_saved_seconds_ =
      &BuildCounter()
           .Name("kvmesh_worker_peer_fetch_saved_seconds_total")
           .Help(
               "Prefill time saved by peer fetches: fetched tokens at this worker's measured "
               "prefill speed (the holder's until it has one), less the fetch time (a fetch that "
               "saved nothing adds 0)")
           .Register(*registry_)
           .Add({});
  peer_exported_pages_ = &BuildCounter()
                              .Name("kvmesh_worker_peer_pages_served_total")
                              .Help("KV pages sent to peers")
                              .Register(*registry_)
                              .Add({});
}

void WorkerMetrics::OnPeerFetch(const std::string& result, int64_t tokens, int64_t bytes,
                                double seconds, double saved_seconds) {
  peer_fetches_->Add({{"result", result}}).Increment();
  peer_bytes_->Add({{"direction", "in"}}).Increment(static_cast<double>(bytes));
  peer_fetch_tokens_->Increment(static_cast<double>(tokens));
  peer_fetch_seconds_->Increment(seconds);
  // A counter only goes up: a fetch that cost more than it saved shows in
  // the seconds counter instead.
  if (saved_seconds > 0) peer_saved_seconds_->Increment(saved_seconds);
  // A fetch that brought nothing (the holder unreachable, evicted, of
  // another page format) counts as the slowest fetch there is: once most of
  // a worker's recent fetches get nothing, its median prices fetching out
  // (1 token/s) and the router sends it no more fetch hints until those
  // samples expire, rather than hints that each end in a recompute.
  if (seconds > 0) {
    std::lock_guard<std::mutex> lock(peer_mu_);
    peer_rate_.Add(tokens > 0 ? static_cast<double>(tokens) / seconds : kNothingFetchedTokensPerS);
  }
}

void WorkerMetrics::OnPeerExport(int64_t pages, int64_t bytes) {
  peer_exported_pages_->Increment(static_cast<double>(pages));
  peer_bytes_->Add({{"direction", "out"}}).Increment(static_cast<double>(bytes));
}

double WorkerMetrics::peer_fetch_tokens_per_s() const {
  std::lock_guard<std::mutex> lock(peer_mu_);
  return peer_rate_.Median();
}

void WorkerMetrics::OnRequestFinished(const RequestOutput& out, double tpot_seconds) {
  requests_->Add({{"outcome", std::string(FinishReasonName(out.finish_reason))}}).Increment();
  prompt_tokens_->Increment(out.prompt_tokens);
  cached_tokens_->Increment(out.cached_tokens);
  generated_tokens_->Increment(out.completion_tokens);
  if (tpot_seconds > 0) tpot_->Observe(tpot_seconds);
  request_seconds_->Observe(out.total_ms / 1e3);
}

void WorkerMetrics::OnFirstToken(double ttft_seconds) { ttft_->Observe(ttft_seconds); }

void WorkerMetrics::OnStep(int32_t prefill_tokens, int32_t decode_tokens, double seconds) {
  step_seconds_->Observe(seconds);
  step_tokens_->Observe(prefill_tokens + decode_tokens);
  prefill_tokens_->Increment(prefill_tokens);
}

void WorkerMetrics::OnPreemption() { preemptions_->Increment(); }

void WorkerMetrics::OnRejected(const std::string& code) {
  requests_->Add({{"outcome", "rejected_" + code}}).Increment();
}

void WorkerMetrics::OnPrediction(int32_t predicted, int32_t actual) {
  predicted_cached_->Increment(predicted);
  predicted_actual_cached_->Increment(actual);
  prediction_error_->Observe(std::abs(predicted - actual));
}

std::string WorkerMetrics::Render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  if (load_source_) {
    const EngineLoad load = load_source_();
    families.push_back(Gauge("kvmesh_worker_running_requests",
                             "Requests being decoded or prefilled", {}, load.running));
    families.push_back(
        Gauge("kvmesh_worker_queue_depth", "Requests waiting to be admitted", {}, load.waiting));
    families.push_back(
        Gauge("kvmesh_worker_kv_blocks",
              "KV blocks by state (free includes cached and retained; retained: free blocks a "
              "cache_control breakpoint keeps)",
              {{"used", static_cast<double>(load.blocks_used)},
               {"free", static_cast<double>(load.blocks_free)},
               {"cached", static_cast<double>(load.blocks_cached)},
               {"retained", static_cast<double>(load.blocks_retained)}}));
    families.push_back(Gauge("kvmesh_worker_kv_blocks_capacity", "KV blocks in the pool", {},
                             static_cast<double>(load.blocks_total)));
    families.push_back(Gauge("kvmesh_worker_kv_reused_blocks",
                             "Cached KV blocks counted as reused (in use or free): found by a "
                             "later request since they were stored, or, with --kv-eviction "
                             "adaptive, computed again soon after their eviction",
                             {}, static_cast<double>(load.blocks_reused)));
    families.push_back(Gauge("kvmesh_worker_kv_refill_ratio",
                             "Of the KV blocks stored in about the last turnover of the cache, "
                             "the share it had evicted within one turnover before (near 1: the "
                             "cache thrashes)",
                             {}, load.kv_refill_ratio));
    if (load.eviction_head_start >= 0) {
      families.push_back(
          Gauge("kvmesh_worker_kv_eviction_head_start_blocks",
                "With --kv-eviction adaptive: how much younger a reused free block counts than a "
                "never-reused one, in blocks stored (learned from evicted blocks that come back)",
                {}, static_cast<double>(load.eviction_head_start)));
    }
    if (load.window_pages_total > 0) {
      families.push_back(
          Gauge("kvmesh_worker_kv_window_pages",
                "Window pages of the sliding-window layers (--kv-window-pages on) by state",
                {{"used", static_cast<double>(load.window_pages_used)},
                 {"capacity", static_cast<double>(load.window_pages_total)}}));
    }
    AddTierFamilies(load, &families);
    families.push_back(Gauge("kvmesh_worker_queued_prefill_tokens",
                             "Prompt tokens still to compute", {},
                             static_cast<double>(load.queued_prefill_tokens)));
    families.push_back(
        Gauge("kvmesh_worker_prefill_tokens_per_second",
              "Recent prefill speed (median of the last steps within 5 minutes; 0: none)", {},
              load.prefill_tokens_per_s));
    families.push_back(
        Gauge("kvmesh_worker_decode_tokens_per_second",
              "Recent decode speed (median of the last steps within 5 minutes; 0: none)", {},
              load.decode_tokens_per_s));
  }
  if (device_source_) {
    const std::vector<DeviceMetric> devices = device_source_();
    using prometheus::MetricType;
    families.push_back(
        DeviceFamily("kvmesh_worker_device_weight_bytes", "Bytes of weights each device holds",
                     MetricType::Gauge, devices,
                     [](const DeviceMetric& d) { return static_cast<double>(d.weight_bytes); }));
    families.push_back(DeviceFamily(
        "kvmesh_worker_device_kv_bytes", "Bytes of KV pages each device holds", MetricType::Gauge,
        devices, [](const DeviceMetric& d) { return static_cast<double>(d.kv_bytes); }));
    families.push_back(DeviceFamily(
        "kvmesh_worker_device_layers", "Layers each device computes", MetricType::Gauge, devices,
        [](const DeviceMetric& d) { return static_cast<double>(d.layers); }));
    families.push_back(DeviceFamily(
        "kvmesh_worker_device_kv_heads", "KV heads each device holds", MetricType::Gauge, devices,
        [](const DeviceMetric& d) { return static_cast<double>(d.kv_heads); }));
    families.push_back(DeviceFamily(
        "kvmesh_worker_device_threads", "Threads each CPU device computes with", MetricType::Gauge,
        devices, [](const DeviceMetric& d) { return static_cast<double>(d.threads); }));
    families.push_back(DeviceFamily("kvmesh_worker_device_collective_seconds_total",
                                    "Time each device spent in all-reduces (tensor split), "
                                    "waiting for the others included",
                                    MetricType::Counter, devices,
                                    [](const DeviceMetric& d) { return d.collective_seconds; }));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace kvmesh
