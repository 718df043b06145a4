// KV events: what a worker tells routers about its prefix cache. A block
// hash is announced when its first copy is stored and withdrawn when its last
// copy is gone, so a router's index holds exactly the hashes that would hit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/block_hash.h"

namespace kvmesh {

enum class CacheTier { kDevice = 1, kHost = 2 };

struct KvEvent {
  enum class Kind { kStored, kRemoved, kAllCleared };
  Kind kind = Kind::kStored;
  // Stored: consecutive blocks of one sequence, in order; Removed: any set.
  std::vector<BlockHash> hashes;
  // Stored only: the hash before hashes[0], absent for a sequence's first block.
  std::optional<BlockHash> parent;
  CacheTier tier = CacheTier::kDevice;

  bool operator==(const KvEvent&) const = default;
};

}  // namespace kvmesh
