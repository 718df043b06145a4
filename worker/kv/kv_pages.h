// KV pages moved between workers (peer prefix fetch).
//
// A page is one full KV block as its owner stores it: its chained hash
// (common/block_hash.h, so model, cache salt and every earlier token are in
// it), its tokens, and its bytes in Executor::ReadBlock's layout (quantized
// pages stay quantized). A worker asks a peer for pages by hash; the peer
// answers with those it holds, in chain order. The asker trusts nothing it
// receives: CheckPeerPages accepts a page only when its hash is the one the
// asker computed itself for that block of its own prompt (under its own cache
// salt), its tokens are the prompt's tokens there and its size is the
// asker's block size, so a forged, colliding or foreign-salt page is
// rejected and the block is computed instead.
//
// Two workers exchange pages only when their page formats (KvPageFormat) are
// equal: the same KV layout, storage types, transforms and K bias.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/block_hash.h"
#include "worker/kv/kv_layout.h"

namespace kvmesh {

struct KvPage {
  BlockHash hash;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> bytes;
};

// What must be equal for two workers' pages to be interchangeable, as one
// string: the layout's shape, types, rounding, rotation and a digest of its
// K bias table (a worker calibrated on other text centers K differently).
std::string KvPageFormat(const KvLayout& layout);

struct PageCheck {
  int32_t accepted = 0;  // leading pages that are what they claim
  std::string rejected;  // why the next one was not (empty: all accepted)
};

// Checks `pages`, claimed to be blocks first_block, first_block + 1, … of
// `prompt`, whose full blocks hash to `hashes` (the asker's own hashes).
// Acceptance stops at the first page that is not exactly that block.
PageCheck CheckPeerPages(std::span<const KvPage> pages, std::span<const BlockHash> hashes,
                         std::span<const int32_t> prompt, int32_t first_block, int block_size,
                         size_t block_bytes);

}  // namespace kvmesh
