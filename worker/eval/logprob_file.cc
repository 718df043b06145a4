#include "worker/eval/logprob_file.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace kvmesh {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the log-prob file is little-endian and is read with memcpy");

constexpr char kMagic[9] = "KVMLOGPB";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxIdentityBytes = 4096;

template <typename T>
void Put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
bool Get(std::ifstream& in, T* value) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(value), sizeof(T)));
}

}  // namespace

LogProbWriter::LogProbWriter(std::string path, LogProbHeader header)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), header_(std::move(header)) {}

LogProbWriter::~LogProbWriter() {
  if (!finished_) {
    out_.close();
    std::error_code ignored;
    std::filesystem::remove(tmp_path_, ignored);
  }
}

StatusOr<std::unique_ptr<LogProbWriter>> LogProbWriter::Create(const std::string& path,
                                                               const LogProbHeader& header) {
  if (header.tokens.size() != static_cast<size_t>(header.n_chunk) * header.n_ctx ||
      header.scored_per_chunk() <= 0 || header.n_vocab <= 0) {
    return InvalidArgumentError(path + ": inconsistent log-prob header");
  }
  std::unique_ptr<LogProbWriter> writer(new LogProbWriter(path, header));
  writer->out_.open(writer->tmp_path_, std::ios::binary | std::ios::trunc);
  if (!writer->out_) return PermissionDeniedError(writer->tmp_path_ + ": cannot create");
  std::ofstream& out = writer->out_;
  out.write(kMagic, 8);
  Put<uint32_t>(out, kVersion);
  Put<uint32_t>(out, static_cast<uint32_t>(header.n_vocab));
  Put<uint32_t>(out, static_cast<uint32_t>(header.n_ctx));
  Put<uint32_t>(out, static_cast<uint32_t>(header.n_chunk));
  Put<uint32_t>(out, static_cast<uint32_t>(header.first));
  Put<uint32_t>(out, static_cast<uint32_t>(header.model_identity.size()));
  out.write(header.model_identity.data(),
            static_cast<std::streamsize>(header.model_identity.size()));
  out.write(reinterpret_cast<const char*>(header.tokens.data()),
            static_cast<std::streamsize>(header.tokens.size() * sizeof(int32_t)));
  if (!out) return DataLossError(writer->tmp_path_ + ": write failed");
  return writer;
}

Status LogProbWriter::WriteChunk(std::span<const float> log_probs) {
  if (log_probs.size() != header_.chunk_floats() || chunks_written_ >= header_.n_chunk) {
    return InternalError(path_ + ": log-prob chunk of the wrong size or one too many");
  }
  out_.write(reinterpret_cast<const char*>(log_probs.data()),
             static_cast<std::streamsize>(log_probs.size() * sizeof(float)));
  if (!out_) return DataLossError(tmp_path_ + ": write failed (disk full?)");
  ++chunks_written_;
  return Status::Ok();
}

Status LogProbWriter::Finish() {
  if (chunks_written_ != header_.n_chunk) {
    return InternalError(path_ + ": finished after " + std::to_string(chunks_written_) + " of " +
                         std::to_string(header_.n_chunk) + " chunks");
  }
  out_.close();
  if (!out_) return DataLossError(tmp_path_ + ": write failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_path_, path_, ec);
  if (ec) return PermissionDeniedError(path_ + ": cannot move into place: " + ec.message());
  finished_ = true;
  return Status::Ok();
}

LogProbReader::LogProbReader(std::string path, LogProbHeader header, std::ifstream in)
    : path_(std::move(path)), header_(std::move(header)), in_(std::move(in)) {}

StatusOr<std::unique_ptr<LogProbReader>> LogProbReader::Open(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the base log-prob file");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    return InvalidArgumentError(path +
                                ": not a kvmesh log-prob file (write one with `kvmesh "
                                "perplexity --save-logits`)");
  }
  uint32_t version = 0, n_vocab = 0, n_ctx = 0, n_chunk = 0, first = 0, identity_bytes = 0;
  if (!Get(in, &version) || version != kVersion) {
    return InvalidArgumentError(path + ": log-prob file version " + std::to_string(version) +
                                " is not supported (this build reads " + std::to_string(kVersion) +
                                ")");
  }
  if (!Get(in, &n_vocab) || !Get(in, &n_ctx) || !Get(in, &n_chunk) || !Get(in, &first) ||
      !Get(in, &identity_bytes) || identity_bytes > kMaxIdentityBytes || n_vocab == 0 ||
      n_vocab > (1u << 24) || n_ctx > (1u << 24) || n_chunk == 0 || n_chunk > (1u << 24) ||
      first + 1 >= n_ctx) {
    return DataLossError(path + ": corrupt log-prob header");
  }
  LogProbHeader header;
  header.n_vocab = static_cast<int>(n_vocab);
  header.n_ctx = static_cast<int>(n_ctx);
  header.n_chunk = static_cast<int>(n_chunk);
  header.first = static_cast<int>(first);
  header.model_identity.resize(identity_bytes);
  const uint64_t token_count = static_cast<uint64_t>(n_chunk) * n_ctx;
  const uint64_t header_bytes = 32 + identity_bytes + token_count * sizeof(int32_t);
  const uint64_t want = header_bytes + n_chunk * header.chunk_floats() * sizeof(float);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size != want) {
    return DataLossError(path + ": has " + std::to_string(size) + " bytes, its header implies " +
                         std::to_string(want) + " (truncated or not finished?)");
  }
  header.tokens.resize(token_count);
  if (!in.read(header.model_identity.data(), identity_bytes) ||
      !in.read(reinterpret_cast<char*>(header.tokens.data()),
               static_cast<std::streamsize>(token_count * sizeof(int32_t)))) {
    return DataLossError(path + ": short read in the header");
  }
  return std::unique_ptr<LogProbReader>(new LogProbReader(path, std::move(header), std::move(in)));
}

Status LogProbReader::ReadChunk(std::vector<float>* log_probs) {
  if (chunks_read_ >= header_.n_chunk) {
    return OutOfRangeError(path_ + ": all " + std::to_string(header_.n_chunk) +
                           " chunks already read");
  }
  log_probs->resize(header_.chunk_floats());
  if (!in_.read(reinterpret_cast<char*>(log_probs->data()),
                static_cast<std::streamsize>(log_probs->size() * sizeof(float)))) {
    return DataLossError(path_ + ": short read in chunk " + std::to_string(chunks_read_));
  }
  ++chunks_read_;
  return Status::Ok();
}

}  // namespace kvmesh
