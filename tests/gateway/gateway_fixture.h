// Test fixture: an HttpGateway on loopback over a FakeInferenceCore, with API
// key "test-key", and a cpp-httplib client for it.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "router/gateway/http_gateway.h"
#include "tests/gateway/fake_inference_core.h"

namespace kvmesh::router::testing {

inline constexpr char kApiKey[] = "test-key";

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override { StartGateway(DefaultOptions()); }

  static gateway::GatewayOptions DefaultOptions() {
    gateway::GatewayOptions options;
    options.api_keys = {"other-key", kApiKey};
    options.keepalive_interval = std::chrono::milliseconds(50);
    options.retry_after_seconds = 2;
    return options;
  }

  void StartGateway(gateway::GatewayOptions options) {
    gateway_.reset();
    gateway_ = std::make_unique<gateway::HttpGateway>(core_, std::move(options));
    Status started = gateway_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    ASSERT_GT(gateway_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", gateway_->port());
    client_->set_read_timeout(10, 0);
  }

  // POST with a bearer key (OpenAI style); `key` empty sends none.
  httplib::Result Post(const std::string& path, const std::string& body,
                       const std::string& key = kApiKey) {
    httplib::Headers headers;
    if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
    return client_->Post(path.c_str(), headers, body, "application/json");
  }

  // POST with x-api-key (Anthropic SDK 0.x style).
  httplib::Result PostWithXApiKey(const std::string& path, const std::string& body,
                                  const std::string& key = kApiKey) {
    httplib::Headers headers = {{"x-api-key", key}, {"anthropic-version", "2023-06-01"}};
    return client_->Post(path.c_str(), headers, body, "application/json");
  }

  static nlohmann::json Json(const httplib::Result& result) {
    return nlohmann::json::parse(result->body);
  }

  FakeInferenceCore core_;
  std::unique_ptr<gateway::HttpGateway> gateway_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace kvmesh::router::testing
