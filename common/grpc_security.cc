#include "common/grpc_security.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "common/secret_compare.h"

namespace kvmesh {
namespace {

StatusOr<std::string> ReadPemFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyDeleter>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of a PEM chain, and how many there are.
StatusOr<X509Ptr> FirstCertificate(const std::string& pem, const std::string& path,
                                   std::string_view option, int* count) {
  BioPtr bio = MemoryBio(pem);
  X509Ptr first;
  *count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (!first)
      first.reset(cert);
    else
      X509_free(cert);
    ++*count;
  }
  ERR_clear_error();  // the read past the last certificate leaves an error queued
  if (!first) {
    return InvalidArgumentError("option " + std::string(option) + ": " + path +
                                " holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")");
  }
  return first;
}

}  // namespace

Status CheckPemCertificate(const std::string& path, std::string_view option) {
  auto pem = ReadPemFile(path);
  if (!pem.ok()) return pem.status().WithPrefix("option " + std::string(option));
  int count = 0;
  return FirstCertificate(*pem, path, option, &count).status();
}

Status CheckPemKeyPair(const std::string& cert_path, const std::string& key_path,
                       std::string_view cert_option, std::string_view key_option) {
  if (cert_path.empty() && key_path.empty()) return Status::Ok();
  if (cert_path.empty() || key_path.empty()) {
    return InvalidArgumentError("options " + std::string(cert_option) + " and " +
                                std::string(key_option) + " must be given together");
  }
  auto cert_pem = ReadPemFile(cert_path);
  if (!cert_pem.ok()) return cert_pem.status().WithPrefix("option " + std::string(cert_option));
  int count = 0;
  ASSIGN_OR_RETURN(X509Ptr cert, FirstCertificate(*cert_pem, cert_path, cert_option, &count));
  auto key_pem = ReadPemFile(key_path);
  if (!key_pem.ok()) return key_pem.status().WithPrefix("option " + std::string(key_option));
  BioPtr bio = MemoryBio(*key_pem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) {
    return InvalidArgumentError("option " + std::string(key_option) + ": " + key_path +
                                " holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("option " + std::string(key_option) + ": the key in " + key_path +
                                " does not match the certificate in " + cert_path);
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (files.cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(
      files.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ASSIGN_OR_RETURN(std::string cert, ReadPemFile(files.cert));
  ASSIGN_OR_RETURN(std::string key, ReadPemFile(files.key));
  ssl.pem_key_cert_pairs.push_back({key, cert});
  if (!files.client_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(files.client_ca));
  }
  return grpc::SslServerCredentials(ssl);
}

ChannelSecurity::ChannelSecurity() : credentials_(grpc::InsecureChannelCredentials()) {}

StatusOr<std::shared_ptr<const ChannelSecurity>> ChannelSecurity::Make(const ClientTlsFiles& files,
                                                                       std::string token) {
  auto s = std::make_shared<ChannelSecurity>();
  if (!token.empty()) s->bearer_ = "Bearer " + token;
  if (!files.enabled) {
    if (!files.ca.empty() || !files.cert.empty() || !files.server_name.empty()) {
      return InvalidArgumentError(
          "a CA bundle, a client certificate or a server name is given for a plaintext client");
    }
    return std::shared_ptr<const ChannelSecurity>(std::move(s));
  }
  grpc::SslCredentialsOptions ssl;
  if (!files.ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(files.ca));
  }
  if (!files.cert.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPemFile(files.cert));
    ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPemFile(files.key));
  }
  s->credentials_ = grpc::SslCredentials(ssl);
  s->server_name_ = files.server_name;
  s->tls_ = true;
  return std::shared_ptr<const ChannelSecurity>(std::move(s));
}

std::shared_ptr<grpc::Channel> ChannelSecurity::Dial(const std::string& address,
                                                     grpc::ChannelArguments args) const {
  if (!server_name_.empty()) args.SetSslTargetNameOverride(server_name_);
  return grpc::CreateCustomChannel(address, credentials_, args);
}

void ChannelSecurity::Authorize(grpc::ClientContext* context) const {
  if (!bearer_.empty()) context->AddMetadata("authorization", bearer_);
}

grpc::Status CheckBearerToken(const grpc::ServerContext& context, std::string_view token,
                              std::string_view service, std::string_view option) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string want = "Bearer " + std::string(token);
  if (it == metadata.end() ||
      !SecretsEqual(std::string_view(it->second.data(), it->second.size()), want)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(service) + " needs the metadata \"authorization: Bearer <" +
                            std::string(option) + ">\"");
  }
  return grpc::Status::OK;
}

}  // namespace kvmesh
