// RouterMetrics: the router's Prometheus metrics (names kvmesh_router_*).
// Thread-safe; gauges of workers and the index are read at scrape time.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <string>

namespace kvmesh::router {

class Registry;

class RouterMetrics {
 public:
  explicit RouterMetrics(Registry* registry);

  // route: "grpc.Generate", "/v1/chat/completions", …; outcome: "ok", an HTTP
  // status, or a gRPC status name.
  void OnRequest(const std::string& route, const std::string& outcome);
  void OnDecision(const std::string& policy, const std::string& reason, double seconds);
  void OnRetry(const std::string& reason);
  void OnFirstToken(double seconds);
  // A request relayed to its end (every outcome but a failure before any
  // worker answered): arrival to the last message.
  void OnRequestDone(double seconds);
  // The router's prediction of cached prompt tokens against the worker's report.
  void OnCachedTokens(int32_t predicted, int32_t reported, int32_t prompt_tokens);

  std::string Render() const;

 private:
  Registry* registry_;
  std::shared_ptr<prometheus::Registry> prom_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Counter>* decisions_;
  prometheus::Family<prometheus::Counter>* retries_;
  prometheus::Histogram* decision_seconds_;
  prometheus::Histogram* ttft_;
  prometheus::Histogram* request_seconds_;
  prometheus::Counter* predicted_;
  prometheus::Counter* reported_;
  prometheus::Counter* prompt_tokens_;
  prometheus::Histogram* prediction_error_;
};

}  // namespace kvmesh::router
