#include "cli/local_model.h"

#include <fstream>
#include <sstream>

#include "common/model_path.h"

namespace kvmesh::cli {

StatusOr<LocalModel> LoadLocalModel(const std::string& model_flag) {
  ASSIGN_OR_RETURN(const std::string path, ResolveModelPath(model_flag));
  LocalModel local;
  ASSIGN_OR_RETURN(local.model, Model::Load(path));
  ASSIGN_OR_RETURN(TokenizerConfig config, TokenizerConfigFromGguf(local.model->file()));
  ASSIGN_OR_RETURN(local.tokenizer, Tokenizer::Create(std::move(config)));
  return local;
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot read the text file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return DataLossError(path + ": read error");
  return text.str();
}

}  // namespace kvmesh::cli
