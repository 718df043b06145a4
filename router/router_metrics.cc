#include "router/router_metrics.h"

#include <prometheus/text_serializer.h>

#include <cmath>
#include <sstream>

#include "router/registry.h"

namespace kvmesh::router {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildHistogram;
using prometheus::Histogram;

prometheus::ClientMetric GaugeValue(prometheus::Labels labels, double v) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (auto& [k, val] : labels) m.label.push_back({k, val});
  m.gauge.value = v;
  return m;
}

prometheus::MetricFamily GaugeFamily(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

}  // namespace

RouterMetrics::RouterMetrics(Registry* registry)
    : registry_(registry), prom_(std::make_shared<prometheus::Registry>()) {
  requests_ = &BuildCounter()
                   .Name("kvmesh_router_requests_total")
                   .Help("Requests by route and outcome")
                   .Register(*prom_);
  decisions_ = &BuildCounter()
                    .Name("kvmesh_router_decisions_total")
                    .Help("Routing decisions by policy and reason")
                    .Register(*prom_);
  retries_ = &BuildCounter()
                  .Name("kvmesh_router_retries_total")
                  .Help("Requests re-sent to another worker before their first token, by reason")
                  .Register(*prom_);
  // Every reason at 0 from the start (router_core.cc's RetryReason, a worker
  // that stalled before the first token, and a disaggregated prefill that
  // failed), so that rates see "none yet".
  for (const char* reason : {"unavailable", "overloaded", "error", "stalled", "prefill_failed"})
    retries_->Add({{"reason", reason}});
  decision_seconds_ = &BuildHistogram()
                           .Name("kvmesh_router_decision_seconds")
                           .Help("Time to choose a worker (index lookup and policy)")
                           .Register(*prom_)
                           .Add({}, Histogram::BucketBoundaries{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4,
                                                                1e-3, 5e-3, 1e-2});
  ttft_ = &BuildHistogram()
               .Name("kvmesh_router_time_to_first_token_seconds")
               .Help("Time from the router receiving a request to relaying its first token")
               .Register(*prom_)
               .Add({}, Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                    2.5, 5, 10, 30});
  request_seconds_ =
      &BuildHistogram()
           .Name("kvmesh_router_request_duration_seconds")
           .Help("Time from the router receiving a request to relaying its last message")
           .Register(*prom_)
           .Add({}, Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                                                30, 60, 120, 300});
  auto counter = [&](const std::string& name, const std::string& help) {
    return &BuildCounter().Name(name).Help(help).Register(*prom_).Add({});
  };
  predicted_ = counter("kvmesh_router_predicted_cached_tokens_total",
                       "Prompt tokens the router expected the chosen worker to have cached");
  reported_ = counter("kvmesh_router_reported_cached_tokens_total",
                      "Prompt tokens the workers reported serving from their cache");
  prompt_tokens_ = counter("kvmesh_router_prompt_tokens_total", "Prompt tokens routed");
  prediction_error_ = &BuildHistogram()
                           .Name("kvmesh_router_cached_tokens_prediction_error_tokens")
                           .Help("|predicted - reported| cached prompt tokens per request")
                           .Register(*prom_)
                           .Add({}, Histogram::BucketBoundaries{0, 16, 64, 256, 1024, 4096});
}

void RouterMetrics::OnRequest(const std::string& route, const std::string& outcome) {
  requests_->Add({{"route", route}, {"outcome", outcome}}).Increment();
}

void RouterMetrics::OnDecision(const std::string& policy, const std::string& reason,
                               double seconds) {
  decisions_->Add({{"policy", policy}, {"reason", reason}}).Increment();
  decision_seconds_->Observe(seconds);
}

void RouterMetrics::OnRetry(const std::string& reason) {
  retries_->Add({{"reason", reason}}).Increment();
}

void RouterMetrics::OnFirstToken(double seconds) { ttft_->Observe(seconds); }

void RouterMetrics::OnRequestDone(double seconds) { request_seconds_->Observe(seconds); }

void RouterMetrics::OnCachedTokens(int32_t predicted, int32_t reported, int32_t prompt_tokens) {
  predicted_->Increment(predicted);
  reported_->Increment(reported);
  prompt_tokens_->Increment(prompt_tokens);
  prediction_error_->Observe(std::abs(predicted - reported));
}

std::string RouterMetrics::Render() const {
  std::vector<prometheus::MetricFamily> families = prom_->Collect();
  auto running = GaugeFamily("kvmesh_router_worker_running_requests",
                             "Requests running on each worker (its last report)");
  auto waiting = GaugeFamily("kvmesh_router_worker_waiting_requests",
                             "Requests queued on each worker (its last report)");
  auto inflight = GaugeFamily("kvmesh_router_worker_inflight_requests",
                              "Requests this router has in flight to each worker");
  auto healthy =
      GaugeFamily("kvmesh_router_worker_healthy", "1 when the worker is in the routing set");
  for (const auto& w : registry_->AllConnections()) {
    const v1::LoadResponse load = w->load();
    const prometheus::Labels l = {{"worker", w->worker_id()}};
    running.metric.push_back(GaugeValue(l, load.running()));
    waiting.metric.push_back(GaugeValue(l, load.waiting()));
    inflight.metric.push_back(GaugeValue(l, w->inflight.load()));
    healthy.metric.push_back(GaugeValue(l, w->healthy() ? 1 : 0));
  }
  families.push_back(running);
  families.push_back(waiting);
  families.push_back(inflight);
  families.push_back(healthy);
  auto models = GaugeFamily("kvmesh_router_model_healthy_workers", "Healthy workers per model");
  for (auto& [name, count] : registry_->HealthyCounts()) {
    models.metric.push_back(GaugeValue({{"model", name}}, count));
  }
  families.push_back(models);
  auto indexed = GaugeFamily("kvmesh_router_index_blocks",
                             "KV blocks the prefix index holds for each worker (from its events)");
  for (auto& [worker, n] : registry_->IndexedBlocks()) {
    indexed.metric.push_back(GaugeValue({{"worker", worker}}, static_cast<double>(n)));
  }
  families.push_back(indexed);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace kvmesh::router
