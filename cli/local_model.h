// Loading what the local evaluation commands (perplexity, kv-calibrate) need:
// a model with its tokenizer, and a text file.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/model/model.h"

namespace kvmesh::cli {

struct LocalModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// `model_flag` as given to -m (empty: the default model, see model_path.h).
StatusOr<LocalModel> LoadLocalModel(const std::string& model_flag);

StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace kvmesh::cli
