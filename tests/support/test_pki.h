// A throwaway public-key infrastructure for TLS tests: a CA and leaf
// certificates it signs (P-256, valid for an hour), written as PEM files into
// a directory of the test's own. Nothing here is fit for real deployments.
#pragma once

#include <string>
#include <vector>

namespace kvmesh::testing {

struct PemPair {
  std::string cert;  // path of the PEM certificate
  std::string key;   // path of its PEM private key
};

class TestPki {
 public:
  // Makes `dir` and a CA named `ca_name` in it (ca.pem, ca.key).
  TestPki(std::string dir, const std::string& ca_name = "kvmesh test CA");
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& ca() const { return ca_.cert; }
  const std::string& dir() const { return dir_; }
  // A certificate for `name` signed by this CA, with DNS `name` and IP
  // 127.0.0.1 as subject alternative names, usable by servers and clients.
  PemPair Issue(const std::string& name);

 private:
  std::string dir_;
  PemPair ca_;
  void* ca_key_ = nullptr;   // EVP_PKEY*
  void* ca_cert_ = nullptr;  // X509*
  int serial_ = 1;
};

}  // namespace kvmesh::testing
