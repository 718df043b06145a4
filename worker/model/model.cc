#include "worker/model/model.h"

#include <algorithm>
#include <vector>

#include "common/sha256.h"

namespace kvmesh {
namespace {

// Header bytes, size, and 16 evenly spaced 4 KiB samples of the data section.
std::string SampledIdentity(const gguf::GgufFile& file) {
  const auto bytes = file.bytes();
  std::vector<uint8_t> buf(bytes.begin(),
                           bytes.begin() + std::min<uint64_t>(file.data_offset(), bytes.size()));
  const uint64_t size = bytes.size();
  for (int i = 0; i < 8; ++i) buf.push_back(static_cast<uint8_t>(size >> (8 * i)));
  const uint64_t data_begin = std::min<uint64_t>(file.data_offset(), size);
  const uint64_t data_len = size - data_begin;
  constexpr uint64_t kSample = 4096;
  for (int i = 0; i < 16 && data_len > 0; ++i) {
    const uint64_t at = data_begin + data_len * i / 16;
    const uint64_t len = std::min(kSample, size - at);
    buf.insert(buf.end(), bytes.begin() + at, bytes.begin() + at + len);
  }
  return "sampled:" + Sha256Hex(buf);
}

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path,
                                             const ModelLoadOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->path_ = path;
  if (options.require_sha256) {
    ASSIGN_OR_RETURN(std::string digest, VerifySha256(path, options.expected_sha256));
    model->identity_ = "sha256:" + digest;
  }
  ASSIGN_OR_RETURN(model->file_, gguf::GgufFile::Open(path));
  ASSIGN_OR_RETURN(model->config_, ModelConfig::FromGguf(*model->file_));
  ASSIGN_OR_RETURN(model->weights_, ModelWeights::Load(*model->file_, model->config_));
  if (model->identity_.empty()) model->identity_ = SampledIdentity(*model->file_);
  return model;
}

}  // namespace kvmesh
