// Executor: runs the model's forward pass for one engine step on some device.
//
// The engine decides *what* to compute (which tokens of which sequences, with
// which KV blocks) and hands the executor a plain ForwardBatch; the executor
// owns the weights on its device and the KV page memory, computes, writes the
// new tokens' K and V into their pages, and returns logits. It never decides
// anything about scheduling or caching.
//
// An executor is driven by one thread (the engine loop); it may use its own
// worker threads or device streams inside Forward().
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/kv/kv_layout.h"

namespace kvmesh {

enum class LogitsMode {
  kNone,  // prefill chunk that is not the last: no logits needed
  kLast,  // logits of the chunk's last token (decode, end of prefill)
  kAll,   // logits of every token (perplexity, teacher forcing)
};

// The tokens of one sequence processed in this step.
struct SequenceChunk {
  int64_t first_token = 0;  // index of the first token in ForwardBatch::tokens
  int32_t num_tokens = 0;   // consecutive tokens of this sequence in the batch
  int32_t start_pos = 0;    // position of the first one = tokens already cached
  // Block ids covering positions [0, start_pos + num_tokens), in order.
  std::span<const int32_t> block_table;
  LogitsMode logits = LogitsMode::kLast;
  // With window pages (KvLayout::window_blocks > 0): the sliding-window
  // layers' block ids, one per block_table entry, -1 for a block no
  // position from start_pos on can attend to (released). Else empty.
  std::span<const int32_t> window_table = {};
};

struct ForwardBatch {
  std::vector<int32_t> tokens;
  std::vector<SequenceChunk> sequences;
};

struct ForwardOutput {
  int n_vocab = 0;
  // Logit rows, n_vocab floats each: for each sequence in batch order, none,
  // its last token's, or all of its tokens' rows (by LogitsMode).
  std::vector<float> logits;
  // Index of each sequence's first row in `logits` (in rows), or -1 if none.
  std::vector<int64_t> first_row;

  const float* Row(int64_t row) const { return logits.data() + row * n_vocab; }
};

class Executor {
 public:
  virtual ~Executor() = default;

  virtual const KvLayout& kv_layout() const = 0;
  virtual int64_t num_blocks() const = 0;

  // Computes the step. Fails (without touching other state) when the batch
  // is malformed: a token id outside the vocabulary, a block id outside the
  // pool, a block table too short for the positions, a chunk past the end of
  // `tokens`.
  virtual Status Forward(const ForwardBatch& batch, ForwardOutput* output) = 0;

  // Copies the bytes of block `block` (every layer, K then V) into `out`; for
  // tests and for moving pages between tiers.
  virtual Status ReadBlock(int32_t block, std::vector<uint8_t>* out) const = 0;
  virtual Status WriteBlock(int32_t block, std::span<const uint8_t> bytes) = 0;
  // ReadBlock into memory the caller owns (the host KV tier's slots), which
  // must be kv_layout().bytes_per_block() long. Executors that copy
  // asynchronously finish before the next Forward() returns.
  virtual Status ReadBlockInto(int32_t block, std::span<uint8_t> out) const {
    std::vector<uint8_t> bytes;
    RETURN_IF_ERROR(ReadBlock(block, &bytes));
    if (bytes.size() != out.size()) {
      return InvalidArgumentError("block buffer has " + std::to_string(out.size()) +
                                  " bytes, expected " + std::to_string(bytes.size()));
    }
    std::copy(bytes.begin(), bytes.end(), out.begin());
    return Status::Ok();
  }
};

}  // namespace kvmesh
