// The file `kvmesh perplexity --save-logits` writes and `--kl-base` reads: the
// natural-log probabilities of every scored position of a perplexity run
// (see perplexity.h), so a later run can measure KL divergence against it.
//
// Stored as f32 log-probabilities, not logits: they are what the KL sum
// needs, and normalising once in the base run keeps the reader trivial.
// (llama.cpp's own file packs them into 16 bits; f32 keeps KL values near
// 1e-6 meaningful.) Little-endian, version 1:
//
//   offset  size  field
//   0       8     magic "KVMLOGPB"
//   8       4     u32 version (1)
//   12      4     u32 n_vocab
//   16      4     u32 n_ctx
//   20      4     u32 n_chunk
//   24      4     u32 first (scored rows per chunk = n_ctx - 1 - first)
//   28      4     u32 length of the model identity, then its bytes
//   ..            i32 tokens[n_chunk][n_ctx], as evaluated (first of each is BOS)
//   ..            f32 log_probs[n_chunk][n_ctx - 1 - first][n_vocab]
//
// The writer fills a temporary file and renames it on Finish(), so an
// interrupted run never leaves a file that looks complete; the reader checks
// the size against the header before anything is read.
//
// One thread per writer or reader.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace kvmesh {

struct LogProbHeader {
  int n_vocab = 0;
  int n_ctx = 0;
  int n_chunk = 0;
  int first = 0;
  std::string model_identity;   // informational: a base may come from other weights
  std::vector<int32_t> tokens;  // n_chunk * n_ctx

  int64_t scored_per_chunk() const { return n_ctx - 1 - first; }
  uint64_t chunk_floats() const { return static_cast<uint64_t>(scored_per_chunk()) * n_vocab; }
};

class LogProbWriter {
 public:
  static StatusOr<std::unique_ptr<LogProbWriter>> Create(const std::string& path,
                                                         const LogProbHeader& header);
  ~LogProbWriter();

  // One chunk's scored rows, in order; header.chunk_floats() values.
  Status WriteChunk(std::span<const float> log_probs);
  // After n_chunk chunks: flushes and moves the file into place.
  Status Finish();

 private:
  LogProbWriter(std::string path, LogProbHeader header);

  std::string path_;
  std::string tmp_path_;
  LogProbHeader header_;
  std::ofstream out_;
  int chunks_written_ = 0;
  bool finished_ = false;
};

class LogProbReader {
 public:
  static StatusOr<std::unique_ptr<LogProbReader>> Open(const std::string& path);

  const LogProbHeader& header() const { return header_; }
  // The next chunk's scored rows (header().chunk_floats() values).
  Status ReadChunk(std::vector<float>* log_probs);

 private:
  LogProbReader(std::string path, LogProbHeader header, std::ifstream in);

  std::string path_;
  LogProbHeader header_;
  std::ifstream in_;
  int chunks_read_ = 0;
};

}  // namespace kvmesh
