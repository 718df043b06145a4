// The start-up and shutdown steps every kvmesh server's main() shares.
#pragma once

#include <functional>
#include <optional>

#include "common/config_schema.h"
#include "common/status.h"

namespace kvmesh {

// Parses flags, the config file and the environment into `schema`, then
// handles --help and --print-config and validates. Returns the exit code when
// the program should stop now (0 after --help/--print-config, 2 on a
// configuration error, with the message on stderr), or nullopt to go on.
std::optional<int> ParseServerConfig(ConfigSchema& schema, int argc, const char* const* argv,
                                     const std::function<Status()>& validate);

// Installs SIGTERM/SIGINT handlers; call before starting threads.
void InstallTerminationHandlers();
// Blocks until SIGTERM or SIGINT arrives.
void WaitForTerminationSignal();

}  // namespace kvmesh
