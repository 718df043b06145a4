// End to end: models, health, metrics, limits, unknown routes and TLS.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "tests/gateway/gateway_fixture.h"

namespace kvmesh::router::testing {
namespace {

using nlohmann::json;

TEST_F(GatewayTest, ListsModels) {
  httplib::Headers auth = {{"Authorization", "Bearer test-key"}};
  httplib::Result result = client_->Get("/v1/models", auth);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(Json(result), json::parse(R"({"object":"list","data":[
      {"id":"tiny","object":"model","created":0,"owned_by":"kvmesh","context_length":512,
       "workers":1},
      {"id":"slow","object":"model","created":0,"owned_by":"kvmesh","context_length":512,
       "workers":1}]})"));
  result = client_->Get("/v1/models/slow", auth);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(Json(result)["id"], "slow");
  result = client_->Get("/v1/models/nope", auth);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
  EXPECT_EQ(Json(result)["error"]["message"], "unknown model \"nope\"");
}

// The listening socket queues a burst of new connections (a thousand
// streaming clients each opening one) instead of the 5 Debian's cpp-httplib
// asks for. The kernel reports a listener's backlog as its Send-Q (ss).
TEST_F(GatewayTest, ListensWithABacklogForBurstsOfConnections) {
  const std::string command =
      "ss -Hltn 'sport = :" + std::to_string(gateway_->port()) + "' 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[512] = {};
  const bool got = std::fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  if (!got) GTEST_SKIP() << "ss (iproute2) did not list the listener; backlog not checked";
  char state[32] = {};
  long recv_q = 0, send_q = 0;
  ASSERT_EQ(std::sscanf(line, "%31s %ld %ld", state, &recv_q, &send_q), 3) << line;
  long somaxconn = 4096;
  if (FILE* f = std::fopen("/proc/sys/net/core/somaxconn", "r")) {
    if (std::fscanf(f, "%ld", &somaxconn) != 1) somaxconn = 4096;
    std::fclose(f);
  }
  EXPECT_EQ(send_q, std::min(4096L, somaxconn)) << line;
}

TEST_F(GatewayTest, UnknownRouteIs404Json) {
  httplib::Result result = client_->Get("/v2/anything");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
  EXPECT_EQ(Json(result)["error"]["message"], "no route for GET /v2/anything");
  // Without a metrics callback, /metrics does not exist either.
  result = client_->Get("/metrics");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
}

TEST_F(GatewayTest, HealthMetricsAndResponseHook) {
  std::mutex mutex;
  std::vector<std::pair<std::string, int>> responses;
  bool healthy = true;
  gateway::GatewayOptions options = DefaultOptions();
  options.metrics_text = [] { return std::string("kvmesh_up 1\n"); };
  options.health = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return healthy ? Status::Ok() : UnavailableError("no healthy worker");
  };
  options.on_response = [&](std::string_view route, int status) {
    std::lock_guard<std::mutex> lock(mutex);
    responses.emplace_back(std::string(route), status);
  };
  StartGateway(std::move(options));

  httplib::Result result = client_->Get("/metrics");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->body, "kvmesh_up 1\n");
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  result = client_->Get("/healthz");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->body, "ok\n");
  {
    std::lock_guard<std::mutex> lock(mutex);
    healthy = false;
  }
  result = client_->Get("/healthz");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 503);
  EXPECT_EQ(result->body, "no healthy worker\n");
  result = Post("/v1/messages", "{}", "bad");
  ASSERT_TRUE(result);
  result = client_->Get("/nowhere");
  ASSERT_TRUE(result);

  // The hook runs after each response is on the wire, on the connection's
  // thread: wait for all five, and compare them in a fixed order.
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (responses.size() >= 5) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard<std::mutex> lock(mutex);
  std::sort(responses.begin(), responses.end());
  EXPECT_EQ(responses, (std::vector<std::pair<std::string, int>>{{"/healthz", 200},
                                                                 {"/healthz", 503},
                                                                 {"/metrics", 200},
                                                                 {"/v1/messages", 401},
                                                                 {"unmatched", 404}}));
}

TEST_F(GatewayTest, OversizedBodyIs413) {
  gateway::GatewayOptions options = DefaultOptions();
  options.max_body_bytes = 64;
  StartGateway(std::move(options));
  std::string body = R"({"prompt": ")" + std::string(100, 'x') + R"("})";
  httplib::Result result = Post("/v1/completions", body);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 413);
  EXPECT_EQ(Json(result)["error"]["message"], "the request body exceeds the limit of 64 bytes");
}

TEST(GatewayStartTest, BadConfigurationsFailToStart) {
  FakeInferenceCore core;
  gateway::GatewayOptions options;
  options.tls_cert_file = "/nonexistent/cert.pem";
  gateway::HttpGateway half_tls(core, options);
  Status status = half_tls.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "TLS needs both a certificate file and a private key file; only the certificate "
            "was given");

  options.tls_key_file = "/nonexistent/key.pem";
  gateway::HttpGateway missing_files(core, options);
  status = missing_files.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "cannot load the TLS certificate \"/nonexistent/cert.pem\" with the key "
            "\"/nonexistent/key.pem\": both must be readable PEM files, and the key must match "
            "the certificate");

  gateway::HttpGateway first(core, gateway::GatewayOptions());
  ASSERT_TRUE(first.Start().ok());
  gateway::GatewayOptions same_port;
  same_port.port = first.port();
  gateway::HttpGateway second(core, same_port);
  status = second.Start();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  std::string expected = "cannot listen on 127.0.0.1:";
  expected += std::to_string(first.port());
  expected += ": the address is in use, not local, or needs privileges";
  EXPECT_EQ(status.message(), expected);
}

// Writes a fresh self-signed P-256 certificate for "localhost" and its key.
void WriteSelfSignedCertificate(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* cert = X509_new();
  ASSERT_NE(cert, nullptr);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  FILE* cert_file = std::fopen(cert_path.c_str(), "w");
  FILE* key_file = std::fopen(key_path.c_str(), "w");
  ASSERT_NE(cert_file, nullptr);
  ASSERT_NE(key_file, nullptr);
  PEM_write_X509(cert_file, cert);
  PEM_write_PrivateKey(key_file, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(cert_file);
  std::fclose(key_file);
  X509_free(cert);
  EVP_PKEY_free(key);
}

TEST(GatewayTlsTest, ServesHttps) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvmesh_gateway_tls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string cert = (dir / "cert.pem").string();
  std::string key = (dir / "key.pem").string();
  WriteSelfSignedCertificate(cert, key);

  FakeInferenceCore core;
  gateway::GatewayOptions options;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  gateway::HttpGateway gateway(core, options);
  Status started = gateway.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(gateway.tls());

  httplib::SSLClient client("127.0.0.1", gateway.port());
  client.set_ca_cert_path(cert.c_str());
  client.enable_server_certificate_verification(false);  // CN is localhost, not 127.0.0.1
  httplib::Result result =
      client.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})",
                  "application/json");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(nlohmann::json::parse(result->body)["choices"][0]["message"]["content"],
            "Hello, world!");

  // Plain HTTP to the TLS port gets no answer.
  httplib::Client plain("127.0.0.1", gateway.port());
  plain.set_read_timeout(2, 0);
  EXPECT_FALSE(plain.Get("/healthz"));
  gateway.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvmesh::router::testing
