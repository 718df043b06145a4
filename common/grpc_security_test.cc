#include "common/grpc_security.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "kvmesh/v1/router.grpc.pb.h"
#include "tests/support/test_pki.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;
using testing::PemPair;
using testing::TestPki;

std::string TempDir(const std::string& name) {
  return ::testing::TempDir() + "kvmesh-" + name + "-" + std::to_string(::getpid());
}

TEST(GrpcSecurityTest, PemFilesAreCheckedWithErrorsNamingOptionAndFile) {
  TestPki pki(TempDir("pem"));
  const PemPair server = pki.Issue("server");
  const PemPair other = pki.Issue("other");
  EXPECT_TRUE(CheckPemCertificate(pki.ca(), "tls_ca").ok());
  EXPECT_TRUE(CheckPemKeyPair(server.cert, server.key, "tls_cert", "tls_key").ok());

  Status missing = CheckPemCertificate(pki.dir() + "/none.pem", "tls_ca");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "option tls_ca: " + pki.dir() + "/none.pem: cannot read");

  const std::string junk = pki.dir() + "/junk.pem";
  std::ofstream(junk) << "not a certificate\n";
  Status not_pem = CheckPemCertificate(junk, "tls_ca");
  EXPECT_EQ(not_pem.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(not_pem.message(), "option tls_ca: " + junk +
                                   " holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")");

  Status swapped = CheckPemKeyPair(server.cert, other.key, "tls_cert", "tls_key");
  EXPECT_EQ(swapped.message(), "option tls_key: the key in " + other.key +
                                   " does not match the certificate in " + server.cert);
  Status cert_as_key = CheckPemKeyPair(server.cert, server.cert, "tls_cert", "tls_key");
  EXPECT_EQ(cert_as_key.message(),
            "option tls_key: " + server.cert + " holds no unencrypted PEM private key");

  auto plaintext_with_cert = ChannelSecurity::Make({false, "", server.cert, server.key, ""}, "");
  ASSERT_FALSE(plaintext_with_cert.ok());
  EXPECT_THAT(plaintext_with_cert.status().message(), HasSubstr("for a plaintext client"));
}

// A RouterRegistry service that admits callers with the token; enough to see
// what a client with given credentials gets from a server with mTLS.
class TokenRegistry final : public v1::RouterRegistry::Service {
 public:
  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterWorkerRequest*,
                        v1::RegisterWorkerResponse* resp) override {
    if (grpc::Status s = CheckBearerToken(*ctx, "s3cret", "RouterRegistry", "worker_token");
        !s.ok()) {
      return s;
    }
    resp->set_router_id("r");
    return grpc::Status::OK;
  }
};

class MutualTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const PemPair server = pki_.Issue("kvmesh-server");
    auto creds = MakeServerCredentials({server.cert, server.key, pki_.ca()});
    ASSERT_TRUE(creds.ok()) << creds.status().ToString();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *creds, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // What a Register call made with `security` to `host` gets.
  grpc::Status Call(const ChannelSecurity& security, const std::string& host = "127.0.0.1") {
    auto stub = v1::RouterRegistry::NewStub(security.Dial(host + ":" + std::to_string(port_)));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    security.Authorize(&ctx);
    v1::RegisterWorkerResponse resp;
    return stub->Register(&ctx, v1::RegisterWorkerRequest(), &resp);
  }

  std::shared_ptr<const ChannelSecurity> Make(const ClientTlsFiles& files,
                                              const std::string& token) {
    auto s = ChannelSecurity::Make(files, token);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : std::make_shared<const ChannelSecurity>();
  }

  TestPki pki_{TempDir("mtls")};
  TokenRegistry service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(MutualTlsTest, OnlyACertifiedClientWithTheTokenGetsAnAnswer) {
  const PemPair client = pki_.Issue("kvmesh-client");
  EXPECT_TRUE(Call(*Make({true, pki_.ca(), client.cert, client.key, ""}, "s3cret")).ok());

  const grpc::Status no_token = Call(*Make({true, pki_.ca(), client.cert, client.key, ""}, ""));
  EXPECT_EQ(no_token.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(no_token.error_message(),
            "RouterRegistry needs the metadata \"authorization: Bearer <worker_token>\"");
  EXPECT_EQ(Call(*Make({true, pki_.ca(), client.cert, client.key, ""}, "s3cre")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // No client certificate, or one from another CA: the handshake fails.
  EXPECT_EQ(Call(*Make({true, pki_.ca(), "", "", ""}, "s3cret")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  TestPki stranger(TempDir("stranger"), "another CA");
  const PemPair foreign = stranger.Issue("kvmesh-client");
  EXPECT_EQ(Call(*Make({true, pki_.ca(), foreign.cert, foreign.key, ""}, "s3cret")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A plaintext client gets nothing either.
  EXPECT_EQ(Call(ChannelSecurity()).error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client that does not trust the server's CA refuses it.
  EXPECT_EQ(Call(*Make({true, stranger.ca(), client.cert, client.key, ""}, "s3cret")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(MutualTlsTest, TheServerNameOverrideIsWhatTheCertificateIsCheckedAgainst) {
  const PemPair client = pki_.Issue("kvmesh-client");
  // The certificate names kvmesh-server and 127.0.0.1, not localhost.
  EXPECT_EQ(Call(*Make({true, pki_.ca(), client.cert, client.key, ""}, "s3cret"), "localhost")
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(Call(*Make({true, pki_.ca(), client.cert, client.key, "kvmesh-server"}, "s3cret"),
                   "localhost")
                  .ok());
  EXPECT_EQ(
      Call(*Make({true, pki_.ca(), client.cert, client.key, "kvmesh-other"}, "s3cret"), "localhost")
          .error_code(),
      grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace kvmesh
