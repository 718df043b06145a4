// Where kvmesh finds a model when the user names none.
//
// The default model is stories260K.gguf. It is looked for, in order, in
//   $KVMESH_MODEL_DIR, ../shared/models (beside the source tree, then beside
//   the working directory), models/ (in the source tree, then the working
//   directory).
// A path the user gives is used as is. Models are never part of the source tree.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace kvmesh {

inline constexpr char kDefaultModelFile[] = "stories260K.gguf";

// The directories searched for a model file given by bare name, in order.
std::vector<std::string> ModelSearchDirs();

// `user_path` if non-empty (it must exist), else the first default model found.
// The error lists every place that was searched.
StatusOr<std::string> ResolveModelPath(const std::string& user_path,
                                       const std::string& default_file = kDefaultModelFile);

}  // namespace kvmesh
