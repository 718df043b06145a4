#include "common/model_path.h"

#include <cstdlib>
#include <filesystem>

namespace kvmesh {

std::vector<std::string> ModelSearchDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("KVMESH_MODEL_DIR"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  dirs.emplace_back(std::string(KVMESH_DEFAULT_SHARED_DIR) + "/models");
  dirs.emplace_back("../shared/models");
  dirs.emplace_back(std::string(KVMESH_DEFAULT_SOURCE_DIR) + "/models");
  dirs.emplace_back("models");
  return dirs;
}

StatusOr<std::string> ResolveModelPath(const std::string& user_path,
                                       const std::string& default_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!user_path.empty()) {
    if (!fs::is_regular_file(user_path, ec)) {
      return NotFoundError(user_path + ": model file not found");
    }
    return user_path;
  }
  std::string searched;
  for (const std::string& dir : ModelSearchDirs()) {
    const fs::path candidate = fs::path(dir) / default_file;
    if (fs::is_regular_file(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
    searched += "\n  " + candidate.string();
  }
  return NotFoundError("no model given (-m) and the default model " + default_file +
                       " was not found; searched:" + searched);
}

}  // namespace kvmesh
