#include "worker/kv/kv_pages.h"

#include <algorithm>

#include "common/sha256.h"
#include "worker/kv/kv_bias.h"

namespace kvmesh {

std::string KvPageFormat(const KvLayout& layout) {
  std::string format = layout.ToString();  // its type names the transforms
  if (layout.k_bias != nullptr) {
    const std::vector<uint8_t> table = layout.k_bias->Serialize();
    format += " k_bias=" + Sha256Hex(table).substr(0, 16);
  }
  return format;
}

PageCheck CheckPeerPages(std::span<const KvPage> pages, std::span<const BlockHash> hashes,
                         std::span<const int32_t> prompt, int32_t first_block, int block_size,
                         size_t block_bytes) {
  PageCheck check;
  const size_t bs = static_cast<size_t>(block_size);
  for (const KvPage& page : pages) {
    const size_t block = static_cast<size_t>(first_block) + check.accepted;
    const std::string where =
        "page " + std::to_string(check.accepted) + " (block " + std::to_string(block) + ")";
    if (block >= hashes.size() || (block + 1) * bs > prompt.size()) {
      check.rejected = where + " is past the prompt's full blocks";
      break;
    }
    if (!(page.hash == hashes[block])) {
      check.rejected = where + " has hash " + page.hash.Hex() + ", expected " + hashes[block].Hex();
      break;
    }
    const auto want = prompt.subspan(block * bs, bs);
    if (page.tokens.size() != bs || !std::equal(want.begin(), want.end(), page.tokens.begin())) {
      check.rejected =
          where + " holds other tokens than the prompt's (a hash collision or a forgery)";
      break;
    }
    if (page.bytes.size() != block_bytes) {
      check.rejected = where + " has " + std::to_string(page.bytes.size()) +
                       " bytes, this worker's blocks have " + std::to_string(block_bytes);
      break;
    }
    ++check.accepted;
  }
  return check;
}

}  // namespace kvmesh
