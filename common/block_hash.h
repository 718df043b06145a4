// Prefix identity of KV-cache blocks, shared by router and worker: the only
// implementation (a test pins its output).
//
// The prompt is cut into blocks of B tokens; only full blocks are hashed. For
// block i:
//   hash[i]  = H("kvmesh.block.v1" || hash[i-1] || B || tokens[i*B, (i+1)*B))
//   hash[-1] = root = H("kvmesh.root.v1" || model identity || [0x00 || salt])
// where H is SHA-256 truncated to 128 bits, tokens are little-endian uint32
// and B is a little-endian uint32. The chain makes a block's hash name its
// whole prefix, so two requests share a block only if everything before it
// matches too; the salt (per tenant) separates requests that must never share
// pages; the model identity separates different weights.
//
// Why SHA-256: clients choose the token sequences, and a hash collision would
// let one tenant's request read another's KV pages (or route badly). A
// non-cryptographic 64- or 128-bit hash (xxHash) can be collided on purpose
// cheaply; SHA-256 truncated to 128 bits needs ~2^64 work for a chosen
// collision. Defence in depth: on a hit the worker also compares the block's
// tokens, so a collision can at worst mis-route, never hand out wrong pages.
// Cost: one SHA-256 compression per block (~0.2 µs with SHA extensions).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvmesh {

struct BlockHash {
  std::array<uint8_t, 16> bytes{};

  bool operator==(const BlockHash&) const = default;
  std::string Hex() const;
  // Parses 16 raw bytes (as carried in protos); false on a wrong length.
  static bool FromBytes(std::string_view raw, BlockHash* out);
  std::string_view AsBytes() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    size_t v;
    std::memcpy(&v, h.bytes.data(), sizeof v);  // already uniformly distributed
    return v;
  }
};

// The chain root for a model identity and an optional cache salt.
BlockHash RootHash(std::string_view model_identity, std::string_view cache_salt = {});

// hash of one full block given its parent (the root for block 0).
BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> block_tokens);

// Hashes of every full block of `tokens`, in order.
std::vector<BlockHash> HashFullBlocks(const BlockHash& root, std::span<const int32_t> tokens,
                                      int block_size);

}  // namespace kvmesh
