#include "common/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace kvmesh {
namespace {

std::string ToHex(const unsigned char* digest, unsigned int len) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

using CtxPtr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

}  // namespace

std::string Sha256Hex(std::span<const uint8_t> bytes) {
  CtxPtr ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  return ToHex(digest, len);
}

StatusOr<std::string> Sha256File(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return NotFoundError(path + ": cannot open for hashing");
  CtxPtr ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<unsigned char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
  }
  if (std::ferror(f.get())) return DataLossError(path + ": read error while hashing");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  return ToHex(digest, len);
}

StatusOr<std::string> VerifySha256(const std::string& path, const std::string& expected_hex) {
  std::string expected = expected_hex;
  std::string source = "the given digest";
  if (expected.empty()) {
    const std::string sidecar = path + ".sha256";
    std::ifstream in(sidecar);
    if (!in) {
      return NotFoundError(path + ": no digest given and no sidecar file " + sidecar);
    }
    in >> expected;
    source = sidecar;
  }
  std::transform(expected.begin(), expected.end(), expected.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (expected.size() != 64 ||
      !std::all_of(expected.begin(), expected.end(), [](char c) { return std::isxdigit(c); })) {
    return InvalidArgumentError(source + ": \"" + expected + "\" is not a 64-digit hex SHA-256");
  }
  ASSIGN_OR_RETURN(std::string actual, Sha256File(path));
  if (actual != expected) {
    return DataLossError(path + ": SHA-256 mismatch: file has " + actual + ", " + source +
                         " says " + expected);
  }
  return actual;
}

}  // namespace kvmesh
