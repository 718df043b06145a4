// How kvmesh processes secure their gRPC ports and the calls they make to
// each other: TLS from PEM files (with an optional client-certificate check,
// mTLS) and a shared service token sent as "authorization: Bearer <token>".
//
// The PEM files are read and checked once, when a process starts (a missing
// file, a certificate that does not parse, a key that does not match its
// certificate are errors naming the file), so a bad file never surfaces later
// as a handshake that silently fails.
//
// ChannelSecurity is immutable once made and may be shared by any number of
// threads (a shared_ptr<const ChannelSecurity> is how callers hold it).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvmesh {

// A server's TLS: its certificate chain and key, and where mutual TLS is
// wanted, the CA bundle whose certificates clients must present.
struct ServerTlsFiles {
  std::string cert;       // PEM certificate chain; empty: plaintext
  std::string key;        // PEM private key of `cert`
  std::string client_ca;  // PEM CA bundle; non-empty: clients need a certificate it signed
};

// A client's TLS: whether it dials over TLS at all, the CA bundle that signs
// the servers it dials (empty: the system's CAs), the certificate it
// presents when the server asks for one, and the name it expects in the
// server's certificate (empty: the host it dials).
struct ClientTlsFiles {
  bool enabled = false;
  std::string ca;
  std::string cert;
  std::string key;
  std::string server_name;
};

// Reads `files` and makes gRPC server credentials (insecure ones when
// files.cert is empty). The options' Validate() checks the files first with
// CheckPem*, so the errors name the option; these name the file.
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// The credentials and token a process uses for every call to one kind of
// peer (a router's calls to workers; a worker's to other workers and to the
// router).
class ChannelSecurity {
 public:
  // Plaintext, no token.
  ChannelSecurity();
  // Reads and checks the files; `token` empty: none sent.
  static StatusOr<std::shared_ptr<const ChannelSecurity>> Make(const ClientTlsFiles& files,
                                                               std::string token);

  // A channel to `address` with these credentials (and the expected server
  // name, when one is set).
  std::shared_ptr<grpc::Channel> Dial(const std::string& address,
                                      grpc::ChannelArguments args = {}) const;
  // Adds the token to a call's metadata (nothing when there is none).
  void Authorize(grpc::ClientContext* context) const;

  bool tls() const { return tls_; }

 private:
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string server_name_;
  std::string bearer_;  // "Bearer <token>", or empty
  bool tls_ = false;
};

// OK when `token` is empty or the call carries "authorization: Bearer
// <token>" (compared in constant time); UNAUTHENTICATED naming `service` and
// the option that holds the token otherwise.
grpc::Status CheckBearerToken(const grpc::ServerContext& context, std::string_view token,
                              std::string_view service, std::string_view option);

// Checks that `path` holds at least one PEM certificate, and that a key
// matches the first certificate of its chain (both paths empty: nothing to
// check; one of them empty: an error, they go together). The errors name
// the options and the files.
Status CheckPemCertificate(const std::string& path, std::string_view option);
Status CheckPemKeyPair(const std::string& cert_path, const std::string& key_path,
                       std::string_view cert_option, std::string_view key_option);

}  // namespace kvmesh
