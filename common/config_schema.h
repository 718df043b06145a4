// ConfigSchema: one declaration per option, read from (in increasing
// precedence) built-in defaults, a YAML file, environment variables and
// command-line flags. Shared by kvmesh-worker and kvmesh-router so every
// option works the same way in all three places:
//
//   YAML key   max_running_requests: 64
//   env        KVMESH_WORKER_MAX_RUNNING_REQUESTS=64   (prefix per program)
//   flag       --max-running-requests 64  (or --max-running-requests=64)
//
// An unknown YAML key, flag or prefixed environment variable, or a value that
// does not parse or is out of range, is an error naming it. Dump() prints the
// effective configuration as YAML (--print-config). Not thread-safe; used once
// at start-up.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kvmesh {

class ConfigSchema {
 public:
  // `env_prefix` like "KVMESH_WORKER_".
  ConfigSchema(std::string program, std::string env_prefix);

  void AddString(const std::string& key, std::string* target, const std::string& help);
  void AddInt(const std::string& key, int64_t* target, int64_t min, int64_t max,
              const std::string& help);
  void AddDouble(const std::string& key, double* target, double min, double max,
                 const std::string& help);
  void AddBool(const std::string& key, bool* target, const std::string& help);
  // Comma-separated on the command line and in env; a YAML list or string.
  void AddStringList(const std::string& key, std::vector<std::string>* target,
                     const std::string& help);
  // Marks an option as secret: Dump() shows "<set>" instead of its value.
  void MarkSecret(const std::string& key);

  // Parses argv: options, `--config FILE` (YAML, applied before env and
  // flags), `--print-config`, `--help`. Applies file, then env, then flags.
  Status Parse(int argc, const char* const* argv);

  const std::string& program() const { return program_; }
  bool print_config() const { return print_config_; }
  bool help() const { return help_; }
  std::string Usage() const;
  std::string Dump() const;

  // Pieces, for tests and for programs that load sources differently.
  Status ApplyYamlText(const std::string& yaml_text, const std::string& source_name);
  Status ApplyEnv(const std::vector<std::string>& environ_entries);

 private:
  enum class Kind { kString, kInt, kDouble, kBool, kStringList };
  struct Option {
    std::string key;  // snake_case
    Kind kind;
    void* target;
    int64_t imin = 0, imax = 0;
    double dmin = 0, dmax = 0;
    std::string help;
    bool secret = false;
  };
  Option* Find(const std::string& key);
  Status Set(Option& o, const std::string& value, const std::string& source);
  std::string ValueString(const Option& o) const;

  std::string program_;
  std::string env_prefix_;
  std::vector<Option> options_;
  bool print_config_ = false;
  bool help_ = false;
};

}  // namespace kvmesh
