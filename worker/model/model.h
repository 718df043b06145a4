// Model: a loaded GGUF model — the mapped file, its validated configuration
// and weights. Immutable after Load(); shared read-only by executors.
#pragma once

#include <memory>
#include <string>

#include "common/gguf/gguf_file.h"
#include "common/status.h"
#include "worker/model/model_config.h"
#include "worker/model/model_weights.h"

namespace kvmesh {

struct ModelLoadOptions {
  // When set, the file's SHA-256 must equal `expected_sha256`, or (if that is
  // empty) the digest in the sidecar file PATH.sha256; loading fails otherwise.
  bool require_sha256 = false;
  std::string expected_sha256;
};

class Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path,
                                               const ModelLoadOptions& options = {});

  const std::string& path() const { return path_; }
  const gguf::GgufFile& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

  // A stable identity of the model's contents: the verified SHA-256 when the
  // file was checked, else a SHA-256 over the header (metadata and tensor
  // table), the file size and samples of the tensor data. Used to root the
  // prefix-cache block hashes, so different weights never share KV pages.
  const std::string& identity() const { return identity_; }

 private:
  Model() = default;

  std::string path_;
  std::unique_ptr<gguf::GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::string identity_;
};

}  // namespace kvmesh
