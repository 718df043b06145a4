// The one-shot SHA256_* functions are deprecated in OpenSSL 3 in favour of
// EVP, which allocates a context per call; a block hash is on the routing hot
// path, so the allocation-free API is used on purpose.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "common/block_hash.h"

#include <openssl/sha.h>

namespace kvmesh {
namespace {

constexpr std::string_view kRootTag = "kvmesh.root.v1";
constexpr std::string_view kBlockTag = "kvmesh.block.v1";

BlockHash Truncate(const unsigned char (&digest)[SHA256_DIGEST_LENGTH]) {
  BlockHash h;
  std::memcpy(h.bytes.data(), digest, h.bytes.size());
  return h;
}

void PutU32(SHA256_CTX* ctx, uint32_t v) {
  const unsigned char le[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                               static_cast<unsigned char>(v >> 16),
                               static_cast<unsigned char>(v >> 24)};
  SHA256_Update(ctx, le, 4);
}

}  // namespace

std::string BlockHash::Hex() const {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool BlockHash::FromBytes(std::string_view raw, BlockHash* out) {
  if (raw.size() != out->bytes.size()) return false;
  std::memcpy(out->bytes.data(), raw.data(), raw.size());
  return true;
}

BlockHash RootHash(std::string_view model_identity, std::string_view cache_salt) {
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, kRootTag.data(), kRootTag.size());
  PutU32(&ctx, static_cast<uint32_t>(model_identity.size()));
  SHA256_Update(&ctx, model_identity.data(), model_identity.size());
  if (!cache_salt.empty()) {
    const unsigned char sep = 0;
    SHA256_Update(&ctx, &sep, 1);
    SHA256_Update(&ctx, cache_salt.data(), cache_salt.size());
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &ctx);
  return Truncate(digest);
}

BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> block_tokens) {
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, kBlockTag.data(), kBlockTag.size());
  SHA256_Update(&ctx, parent.bytes.data(), parent.bytes.size());
  PutU32(&ctx, static_cast<uint32_t>(block_tokens.size()));
  for (int32_t t : block_tokens) PutU32(&ctx, static_cast<uint32_t>(t));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &ctx);
  return Truncate(digest);
}

std::vector<BlockHash> HashFullBlocks(const BlockHash& root, std::span<const int32_t> tokens,
                                      int block_size) {
  std::vector<BlockHash> out;
  if (block_size <= 0) return out;
  const size_t n_full = tokens.size() / block_size;
  out.reserve(n_full);
  BlockHash parent = root;
  for (size_t i = 0; i < n_full; ++i) {
    parent = ChainBlockHash(parent, tokens.subspan(i * block_size, block_size));
    out.push_back(parent);
  }
  return out;
}

}  // namespace kvmesh
