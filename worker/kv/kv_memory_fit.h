// Memory fit: how many KV blocks a memory budget buys.
//
// The budget is what the user writes after --kv-memory:
//   - an absolute size: "536870912", "512MiB", "512M", "2G", "1.5GiB", "4GB".
//     K/M/G/T and KiB/MiB/GiB/TiB (also Ki/Mi/Gi/Ti) are powers of 1024;
//     KB/MB/GB/TB are powers of 1000; case does not matter;
//   - a fraction of the memory left after the weights: "0.5", "50%", "1".
//     A plain number in (0, 1] is a fraction, a plain integer above 1 is a
//     byte count.
// "Left after the weights" is the device's available memory (on the CPU,
// MemAvailable from /proc/meminfo) minus the weights' bytes. MemAvailable
// counts the page cache as available, and CPU weights are memory-mapped file
// pages, so subtracting them keeps the KV cache from being sized out of the
// memory the weights themselves need.
//
// Running out is decided here, once, with an error that says what to change:
// a budget that does not hold one sequence's whole context is refused rather
// than turned into a cache that preempts forever. Pure functions, except
// ReadMemAvailable, which reads a file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "worker/kv/kv_layout.h"

namespace kvmesh {

struct KvMemoryBudget {
  uint64_t bytes = 0;     // absolute budget; used when fraction == 0
  double fraction = 0.0;  // in (0, 1]: share of the memory left after the weights
  std::string text;       // as the user wrote it, for messages
};

StatusOr<KvMemoryBudget> ParseKvMemoryBudget(std::string_view text);

struct KvFitInputs {
  uint64_t available_bytes = 0;                 // memory available now on the device
  uint64_t weights_bytes = 0;                   // weights still to be counted against it
  int64_t context_tokens = 0;                   // one sequence's context; must fit whole
  int64_t max_blocks = (int64_t{1} << 31) - 1;  // block ids are int32
};

struct KvFit {
  int64_t num_blocks = 0;
  uint64_t budget_bytes = 0;  // the budget resolved to bytes
  uint64_t bytes_used = 0;    // num_blocks * bytes_per_block
  int64_t num_tokens = 0;     // num_blocks * block_size
};

// Derives the block count for `layout` (which must be valid). Errors: a
// fraction with no memory left after the weights, a budget smaller than one
// block or than `context_tokens` needs.
StatusOr<KvFit> FitKvBlocks(const KvMemoryBudget& budget, const KvLayout& layout,
                            const KvFitInputs& inputs);

// Parses `budget_text` and fits it for `layout` on this machine's CPU memory:
// reads MemAvailable only for a fractional budget. `weights_bytes` is the
// model's size (its memory-mapped file).
StatusOr<KvFit> FitKvBlocksOnHost(std::string_view budget_text, const KvLayout& layout,
                                  uint64_t weights_bytes, int64_t context_tokens);

// The MemAvailable line of /proc/meminfo text, in bytes.
StatusOr<uint64_t> ParseMemAvailable(std::string_view meminfo);
StatusOr<uint64_t> ReadMemAvailable(const std::string& path = "/proc/meminfo");

// "512.0 MiB", "1.50 GiB", "768 B": for messages.
std::string FormatBytes(uint64_t bytes);

}  // namespace kvmesh
