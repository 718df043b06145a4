#include "common/server_main.h"

#include <semaphore.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

namespace kvmesh {
namespace {

sem_t g_signal;
void OnSignal(int) { sem_post(&g_signal); }  // async-signal-safe

}  // namespace

std::optional<int> ParseServerConfig(ConfigSchema& schema, int argc, const char* const* argv,
                                     const std::function<Status()>& validate) {
  if (Status s = schema.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", schema.program().c_str(), s.message().c_str());
    return 2;
  }
  if (schema.help()) {
    std::printf("%s", schema.Usage().c_str());
    return 0;
  }
  if (Status s = validate(); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", schema.program().c_str(), s.message().c_str());
    return 2;
  }
  if (schema.print_config()) {
    std::printf("%s", schema.Dump().c_str());
    return 0;
  }
  return std::nullopt;
}

void InstallTerminationHandlers() {
  sem_init(&g_signal, 0, 0);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
}

void WaitForTerminationSignal() {
  while (sem_wait(&g_signal) != 0 && errno == EINTR) {
  }
}

}  // namespace kvmesh
