#include "worker/runtime/device_spec.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace kvmesh {
namespace {

constexpr int kMaxIndex = 1023;
constexpr int kMaxCore = 65535;

bool ParseInt(std::string_view text, int max, int* out) {
  if (text.empty() || text.size() > 6) return false;
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0 || value > max) {
    return false;
  }
  *out = value;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Status BadEntry(std::string_view entry, std::string_view why) {
  return InvalidArgumentError("--devices entry '" + std::string(entry) + "': " + std::string(why) +
                              " (expected cpu:N, cpu:N@FIRST-LAST, cuda:N or cuda:N.V)");
}

// Adds the cores of one item ("4" or "4-7") to `cores`.
Status AddCores(std::string_view entry, std::string_view item, std::vector<int>* cores) {
  const size_t dash = item.find('-');
  int first = 0, last = 0;
  if (dash == std::string_view::npos) {
    if (!ParseInt(item, kMaxCore, &first))
      return BadEntry(entry, "bad core '" + std::string(item) + "'");
    last = first;
  } else if (!ParseInt(item.substr(0, dash), kMaxCore, &first) ||
             !ParseInt(item.substr(dash + 1), kMaxCore, &last) || last < first) {
    return BadEntry(entry, "bad core range '" + std::string(item) + "'");
  }
  for (int c = first; c <= last; ++c) cores->push_back(c);
  return Status::Ok();
}

StatusOr<DeviceSpec> ParseEntry(std::string_view entry,
                                const std::vector<std::string>& core_items) {
  DeviceSpec spec;
  const size_t colon = entry.find(':');
  if (colon == std::string_view::npos) return BadEntry(entry, "no ':' between kind and index");
  const std::string_view kind = entry.substr(0, colon);
  std::string_view rest = entry.substr(colon + 1);
  const size_t at = rest.find('@');
  const std::string_view index = rest.substr(0, at);
  if (kind == "cpu") {
    spec.kind = DeviceKind::kCpu;
  } else if (kind == "cuda") {
    spec.kind = DeviceKind::kCuda;
  } else {
    return BadEntry(entry, "unknown device kind '" + std::string(kind) + "'");
  }
  // cuda:N.V is virtual device V on GPU N: several shards of one plan on one
  // GPU, which is how a one-GPU machine runs (and tests) a split.
  const size_t dot = index.find('.');
  if (dot != std::string_view::npos) {
    if (spec.kind != DeviceKind::kCuda) return BadEntry(entry, "only CUDA devices can be virtual");
    if (!ParseInt(index.substr(dot + 1), kMaxIndex, &spec.virtual_index)) {
      return BadEntry(entry,
                      "bad virtual device index '" + std::string(index.substr(dot + 1)) + "'");
    }
  }
  if (!ParseInt(index.substr(0, dot), kMaxIndex, &spec.index)) {
    return BadEntry(entry, "bad device index '" + std::string(index.substr(0, dot)) + "'");
  }
  if (at != std::string_view::npos) {
    if (spec.kind != DeviceKind::kCpu) return BadEntry(entry, "only CPU devices take a core list");
    std::vector<std::string> items{std::string(rest.substr(at + 1))};
    items.insert(items.end(), core_items.begin(), core_items.end());
    for (const std::string& item : items) RETURN_IF_ERROR(AddCores(entry, Trim(item), &spec.cores));
    std::vector<int> sorted = spec.cores;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return BadEntry(entry, "a core is listed twice");
    }
  } else if (!core_items.empty()) {
    return BadEntry(entry, "a core list needs '@' before it");
  }
  return spec;
}

}  // namespace

std::string DeviceSpec::Name() const {
  std::string name =
      std::string(kind == DeviceKind::kCpu ? "cpu:" : "cuda:") + std::to_string(index);
  if (virtual_index >= 0) name += "." + std::to_string(virtual_index);
  return name;
}

std::string DeviceSpec::ToString() const {
  return cores.empty() ? Name() : Name() + "@" + FormatCoreList(cores);
}

std::string FormatCoreList(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cores[i]);
    if (j > i) out += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

StatusOr<std::vector<DeviceSpec>> ParseDeviceList(std::string_view text) {
  // Split on commas; items that start with a digit belong to the previous
  // entry's core list.
  std::vector<std::pair<std::string, std::vector<std::string>>> entries;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = Trim(text.substr(start, comma - start));
    if (item.empty()) {
      return InvalidArgumentError("--devices '" + std::string(text) + "': empty entry");
    }
    if (item[0] >= '0' && item[0] <= '9' && !entries.empty()) {
      entries.back().second.emplace_back(item);
    } else {
      entries.push_back({std::string(item), {}});
    }
    start = comma + 1;
  }
  std::vector<DeviceSpec> devices;
  std::set<std::string> names;
  std::set<int> cores;
  for (const auto& [entry, core_items] : entries) {
    ASSIGN_OR_RETURN(DeviceSpec spec, ParseEntry(entry, core_items));
    if (!names.insert(spec.Name()).second) return BadEntry(entry, "device named twice");
    for (int c : spec.cores) {
      if (!cores.insert(c).second) {
        return BadEntry(entry, "core " + std::to_string(c) + " is given to two devices");
      }
    }
    devices.push_back(std::move(spec));
  }
  for (const DeviceSpec& a : devices) {
    for (const DeviceSpec& b : devices) {
      if (a.kind == DeviceKind::kCuda && b.kind == DeviceKind::kCuda && a.index == b.index &&
          a.virtual_index < 0 && b.virtual_index >= 0) {
        return BadEntry(
            b.Name(), "GPU " + std::to_string(a.index) + " is given whole and as virtual devices");
      }
    }
  }
  return devices;
}

}  // namespace kvmesh
