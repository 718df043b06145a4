#include "common/config_schema.h"

#include <unistd.h>  // environ
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace kvmesh {
namespace {

std::string FlagName(const std::string& key) {
  std::string f = "--" + key;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

std::string EnvName(const std::string& prefix, const std::string& key) {
  std::string e = prefix + key;
  for (char& c : e) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ',')) {
    cur.erase(0, cur.find_first_not_of(" \t"));
    cur.erase(cur.find_last_not_of(" \t") + 1);
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

}  // namespace

ConfigSchema::ConfigSchema(std::string program, std::string env_prefix)
    : program_(std::move(program)), env_prefix_(std::move(env_prefix)) {}

void ConfigSchema::AddString(const std::string& key, std::string* target, const std::string& help) {
  options_.push_back({key, Kind::kString, target, 0, 0, 0, 0, help});
}
void ConfigSchema::AddInt(const std::string& key, int64_t* target, int64_t min, int64_t max,
                          const std::string& help) {
  options_.push_back({key, Kind::kInt, target, min, max, 0, 0, help});
}
void ConfigSchema::AddDouble(const std::string& key, double* target, double min, double max,
                             const std::string& help) {
  options_.push_back({key, Kind::kDouble, target, 0, 0, min, max, help});
}
void ConfigSchema::AddBool(const std::string& key, bool* target, const std::string& help) {
  options_.push_back({key, Kind::kBool, target, 0, 0, 0, 0, help});
}
void ConfigSchema::AddStringList(const std::string& key, std::vector<std::string>* target,
                                 const std::string& help) {
  options_.push_back({key, Kind::kStringList, target, 0, 0, 0, 0, help});
}
void ConfigSchema::MarkSecret(const std::string& key) {
  if (Option* o = Find(key)) o->secret = true;
}

ConfigSchema::Option* ConfigSchema::Find(const std::string& key) {
  for (Option& o : options_) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

Status ConfigSchema::Set(Option& o, const std::string& value, const std::string& source) {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError(source + ": option " + o.key + ": \"" + value + "\" " + what);
  };
  switch (o.kind) {
    case Kind::kString:
      *static_cast<std::string*>(o.target) = value;
      return Status::Ok();
    case Kind::kStringList:
      *static_cast<std::vector<std::string>*>(o.target) = SplitCommas(value);
      return Status::Ok();
    case Kind::kBool: {
      std::string v = value;
      for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (v == "true" || v == "1" || v == "yes" || v == "on") {
        *static_cast<bool*>(o.target) = true;
      } else if (v == "false" || v == "0" || v == "no" || v == "off") {
        *static_cast<bool*>(o.target) = false;
      } else {
        return bad("is not a boolean (true/false)");
      }
      return Status::Ok();
    }
    case Kind::kInt: {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE) return bad("is not an integer");
      if (v < o.imin || v > o.imax) {
        return bad("is outside " + std::to_string(o.imin) + ".." + std::to_string(o.imax));
      }
      *static_cast<int64_t*>(o.target) = v;
      return Status::Ok();
    }
    case Kind::kDouble: {
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno == ERANGE) return bad("is not a number");
      if (!(v >= o.dmin && v <= o.dmax)) {
        std::ostringstream range;
        range << o.dmin << ".." << o.dmax;
        return bad("is outside " + range.str());
      }
      *static_cast<double*>(o.target) = v;
      return Status::Ok();
    }
  }
  return InternalError("unhandled option kind");
}

Status ConfigSchema::ApplyYamlText(const std::string& yaml_text, const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(source_name + ": not valid YAML: " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return InvalidArgumentError(source_name + ": expected a mapping of options");
  for (const auto& kv : root) {
    const std::string where =
        source_name + " (line " + std::to_string(kv.first.Mark().line + 1) + ")";
    if (!kv.first.IsScalar())
      return InvalidArgumentError(where + ": an option name must be a word");
    const std::string key = kv.first.as<std::string>();
    Option* o = Find(key);
    if (o == nullptr) return InvalidArgumentError(where + ": unknown option \"" + key + "\"");
    const YAML::Node& v = kv.second;
    if (o->kind == Kind::kStringList && v.IsSequence()) {
      std::vector<std::string> list;
      for (const auto& item : v) {
        if (!item.IsScalar())
          return InvalidArgumentError(where + ": option " + key + ": list items must be scalars");
        list.push_back(item.as<std::string>());
      }
      *static_cast<std::vector<std::string>*>(o->target) = list;
      continue;
    }
    if (!v.IsScalar()) {
      return InvalidArgumentError(where + ": option " + key + " must be a single value");
    }
    RETURN_IF_ERROR(Set(*o, v.as<std::string>(), where));
  }
  return Status::Ok();
}

Status ConfigSchema::ApplyEnv(const std::vector<std::string>& environ_entries) {
  for (const std::string& entry : environ_entries) {
    if (entry.rfind(env_prefix_, 0) != 0) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    Option* match = nullptr;
    for (Option& o : options_) {
      if (EnvName(env_prefix_, o.key) == name) match = &o;
    }
    if (match == nullptr) {
      return InvalidArgumentError("environment variable " + name + " is not a " + program_ +
                                  " option");
    }
    RETURN_IF_ERROR(Set(*match, entry.substr(eq + 1), "environment variable " + name));
  }
  return Status::Ok();
}

Status ConfigSchema::Parse(int argc, const char* const* argv) {
  // First pass: split argv into (option, value) pairs and find --config.
  std::vector<std::pair<Option*, std::string>> flags;
  std::string config_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg == "--print-config") {
      print_config_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return InvalidArgumentError("unexpected argument \"" + arg + "\" (options start with --)");
    }
    std::string value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--config") {
      if (!has_value) {
        if (i + 1 >= argc) return InvalidArgumentError("--config needs a file name");
        value = argv[++i];
      }
      config_file = value;
      continue;
    }
    Option* o = nullptr;
    for (Option& candidate : options_) {
      if (FlagName(candidate.key) == arg) o = &candidate;
    }
    if (o == nullptr) return InvalidArgumentError("unknown flag " + arg + " (see --help)");
    if (!has_value) {
      if (o->kind == Kind::kBool &&
          (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)) {
        value = "true";
      } else {
        if (i + 1 >= argc) return InvalidArgumentError("flag " + arg + " needs a value");
        value = argv[++i];
      }
    }
    flags.push_back({o, value});
  }
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) return NotFoundError(config_file + ": cannot read the config file");
    std::ostringstream text;
    text << in.rdbuf();
    RETURN_IF_ERROR(ApplyYamlText(text.str(), config_file));
  }
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  RETURN_IF_ERROR(ApplyEnv(env));
  for (auto& [o, value] : flags) RETURN_IF_ERROR(Set(*o, value, "flag " + FlagName(o->key)));
  return Status::Ok();
}

std::string ConfigSchema::ValueString(const Option& o) const {
  if (o.secret) {
    const bool empty = o.kind == Kind::kStringList
                           ? static_cast<const std::vector<std::string>*>(o.target)->empty()
                           : static_cast<const std::string*>(o.target)->empty();
    if (o.kind == Kind::kStringList) return empty ? "[]" : "[\"<set>\"]";
    return empty ? "\"\"" : "\"<set>\"";
  }
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::Flow;
  switch (o.kind) {
    case Kind::kString:
      out << YAML::DoubleQuoted << *static_cast<const std::string*>(o.target);
      break;
    case Kind::kInt:
      out << *static_cast<const int64_t*>(o.target);
      break;
    case Kind::kDouble:
      out << *static_cast<const double*>(o.target);
      break;
    case Kind::kBool:
      out << *static_cast<const bool*>(o.target);
      break;
    case Kind::kStringList:
      out << *static_cast<const std::vector<std::string>*>(o.target);
      break;
  }
  return out.c_str();
}

std::string ConfigSchema::Dump() const {
  std::string out = "# effective " + program_ + " configuration\n";
  for (const Option& o : options_) out += o.key + ": " + ValueString(o) + "\n";
  return out;
}

std::string ConfigSchema::Usage() const {
  std::string out = "usage: " + program_ +
                    " [--config FILE] [--print-config] [options]\n\n"
                    "Every option may also be set in the YAML config file (key) or the\n"
                    "environment (" +
                    env_prefix_ +
                    "KEY); flags win over the environment,\n"
                    "which wins over the file.\n\n";
  for (const Option& o : options_) {
    std::string flag = FlagName(o.key);
    flag.resize(std::max<size_t>(flag.size() + 2, 30), ' ');
    out += "  " + flag + o.help + " (default " + ValueString(o) + ")\n";
  }
  return out;
}

}  // namespace kvmesh
