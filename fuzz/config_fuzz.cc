// libFuzzer target: the servers' YAML config files. The input is loaded as
// the config file of kvmesh-worker and of kvmesh-router
// (ConfigSchema::ApplyYamlText over WorkerOptions / RouterOptions::Register),
// and what loads is judged by Validate(). A bad file is an ordinary error
// naming the option. Besides crashes, uncaught exceptions (yaml-cpp throws)
// and sanitizer reports, a finding is a configuration whose --print-config
// output (Dump) does not load again, or loads into a different one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/config_schema.h"
#include "common/status.h"
#include "router/router_options.h"
#include "worker/service/worker_options.h"

namespace {

using kvmesh::ConfigSchema;
using kvmesh::WorkerOptions;
using kvmesh::router::RouterOptions;

// Validate() reads the PEM files options name, whole. The fuzzer must not
// make it read /dev/zero, a FIFO or /proc: any path but a small regular file
// elsewhere becomes one that does not exist (the "cannot read" error).
constexpr uintmax_t kMaxReadableFileBytes = 1 << 20;
constexpr char kMissingFile[] = "/nonexistent/kvmesh-config-fuzz";

void KeepReadable(std::string* path) {
  namespace fs = std::filesystem;
  if (path->empty()) return;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(*path, ec);
  const std::string name = canonical.string();
  const bool special_tree =
      name.rfind("/proc/", 0) == 0 || name.rfind("/sys/", 0) == 0 || name.rfind("/dev/", 0) == 0;
  if (!ec && !special_tree && fs::is_regular_file(canonical, ec) && !ec &&
      fs::file_size(canonical, ec) <= kMaxReadableFileBytes && !ec) {
    return;
  }
  *path = kMissingFile;
}

void KeepFilesReadable(WorkerOptions* o) {
  for (std::string* path : {&o->tls_cert, &o->tls_key, &o->tls_ca, &o->kv_bias}) {
    KeepReadable(path);
  }
}

void KeepFilesReadable(RouterOptions* o) {
  for (std::string* path : {&o->tls_cert, &o->tls_key, &o->tls_client_ca, &o->worker_tls_ca,
                            &o->worker_tls_cert, &o->worker_tls_key}) {
    KeepReadable(path);
  }
}

// One server's options and the schema that points into them: built together
// and never moved.
template <typename Options>
struct BoundConfig {
  BoundConfig(const std::string& program, const std::string& env_prefix)
      : schema(program, env_prefix) {
    options.Register(&schema);
  }
  BoundConfig(const BoundConfig&) = delete;
  BoundConfig& operator=(const BoundConfig&) = delete;

  Options options;
  ConfigSchema schema;
};

[[noreturn]] void Fail(const std::string& program, const std::string& what,
                       const std::string& dump) {
  std::fprintf(stderr, "%s: %s\n--- dump ---\n%s", program.c_str(), what.c_str(), dump.c_str());
  std::abort();
}

template <typename Options>
void Exercise(const std::string& program, const std::string& env_prefix, const std::string& yaml) {
  BoundConfig<Options> config(program, env_prefix);
  const kvmesh::Status applied = config.schema.ApplyYamlText(yaml, "fuzz.yaml");

  // --print-config shows the effective options (some applied, when the file
  // failed half-way); loading that text again gives the same options.
  const std::string dump = config.schema.Dump();
  BoundConfig<Options> reloaded(program, env_prefix);
  if (kvmesh::Status s = reloaded.schema.ApplyYamlText(dump, "dump.yaml"); !s.ok()) {
    Fail(program, "the --print-config output does not load: " + s.ToString(), dump);
  }
  if (const std::string again = reloaded.schema.Dump(); again != dump) {
    Fail(program, "the --print-config output loads into other options:\n" + again, dump);
  }

  if (!applied.ok()) return;
  KeepFilesReadable(&config.options);
  (void)config.options.Validate();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  Exercise<WorkerOptions>("kvmesh-worker", "KVMESH_WORKER_", yaml);
  Exercise<RouterOptions>("kvmesh-router", "KVMESH_ROUTER_", yaml);
  return 0;
}
