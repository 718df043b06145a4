#include "tests/support/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace kvmesh::testing {
namespace {

void Fail(const std::string& what) { throw std::runtime_error("test PKI: " + what); }

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) Fail("extension " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* NewCertificate(EVP_PKEY* key, const std::string& common_name, int serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  return cert;
}

void Write(const std::string& cert_path, X509* cert, const std::string& key_path, EVP_PKEY* key) {
  FILE* c = std::fopen(cert_path.c_str(), "w");
  FILE* k = std::fopen(key_path.c_str(), "w");
  if (c == nullptr || k == nullptr) Fail("cannot write " + cert_path);
  PEM_write_X509(c, cert);
  PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(c);
  std::fclose(k);
}

}  // namespace

TestPki::TestPki(std::string dir, const std::string& ca_name) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) Fail("key generation");
  X509* cert = NewCertificate(key, ca_name, serial_++);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  if (X509_sign(cert, key, EVP_sha256()) <= 0) Fail("signing the CA");
  ca_ = {dir_ + "/ca.pem", dir_ + "/ca.key"};
  Write(ca_.cert, cert, ca_.key, key);
  ca_key_ = key;
  ca_cert_ = cert;
}

TestPki::~TestPki() {
  X509_free(static_cast<X509*>(ca_cert_));
  EVP_PKEY_free(static_cast<EVP_PKEY*>(ca_key_));
}

PemPair TestPki::Issue(const std::string& name) {
  auto* ca_cert = static_cast<X509*>(ca_cert_);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) Fail("key generation");
  X509* cert = NewCertificate(key, name, serial_++);
  X509_set_issuer_name(cert, X509_get_subject_name(ca_cert));
  AddExtension(cert, ca_cert, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, ca_cert, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExtension(cert, ca_cert, NID_ext_key_usage, "serverAuth,clientAuth");
  AddExtension(cert, ca_cert, NID_subject_alt_name, "DNS:" + name + ",IP:127.0.0.1");
  AddExtension(cert, ca_cert, NID_authority_key_identifier, "keyid");
  if (X509_sign(cert, static_cast<EVP_PKEY*>(ca_key_), EVP_sha256()) <= 0) Fail("signing");
  PemPair out{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  Write(out.cert, cert, out.key, key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace kvmesh::testing
