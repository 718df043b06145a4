#include "worker/kv/kv_memory_fit.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kvmesh {
namespace {

struct Unit {
  std::string_view suffix;
  double multiplier;
};

constexpr double kKi = 1024.0;
constexpr Unit kUnits[] = {
    {"b", 1.0},
    {"k", kKi},
    {"ki", kKi},
    {"kib", kKi},
    {"kb", 1e3},
    {"m", kKi* kKi},
    {"mi", kKi* kKi},
    {"mib", kKi* kKi},
    {"mb", 1e6},
    {"g", kKi* kKi* kKi},
    {"gi", kKi* kKi* kKi},
    {"gib", kKi* kKi* kKi},
    {"gb", 1e9},
    {"t", kKi* kKi* kKi* kKi},
    {"ti", kKi* kKi* kKi* kKi},
    {"tib", kKi* kKi* kKi* kKi},
    {"tb", 1e12},
};

Status BadBudget(std::string_view text, std::string_view why) {
  std::string message = "--kv-memory '";
  message += text;
  message += "': ";
  message += why;
  message +=
      "; give a size (512MiB, 2G, 4GB, 1073741824) or a fraction of the memory left after "
      "the weights (0.5, 50%)";
  return InvalidArgumentError(std::move(message));
}

}  // namespace

StatusOr<KvMemoryBudget> ParseKvMemoryBudget(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  const std::string_view trimmed = text.substr(begin, end - begin);
  size_t number_end = 0;
  while (number_end < trimmed.size() &&
         (std::isdigit(static_cast<unsigned char>(trimmed[number_end])) ||
          trimmed[number_end] == '.')) {
    ++number_end;
  }
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(trimmed.data(), trimmed.data() + number_end, value);
  if (number_end == 0 || ec != std::errc() || ptr != trimmed.data() + number_end ||
      !std::isfinite(value)) {
    return BadBudget(text, "no number");
  }
  std::string suffix;
  for (char c : trimmed.substr(number_end)) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  KvMemoryBudget budget;
  budget.text = std::string(trimmed);
  if (suffix == "%") {
    if (value <= 0.0 || value > 100.0) return BadBudget(text, "a percentage must be in (0, 100]");
    budget.fraction = value / 100.0;
    return budget;
  }
  if (suffix.empty()) {
    if (value > 0.0 && value <= 1.0) {
      budget.fraction = value;
      return budget;
    }
    if (value != std::floor(value)) {
      return BadBudget(text, "a plain number above 1 must be a whole number of bytes");
    }
    if (value == 0.0) return BadBudget(text, "the budget must be positive");
    if (value >= 1.8e19) return BadBudget(text, "more bytes than a 64-bit count holds");
    budget.bytes = static_cast<uint64_t>(value);
    return budget;
  }
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    const double bytes = std::floor(value * unit.multiplier);
    if (bytes < 1.0) return BadBudget(text, "the budget must be at least one byte");
    if (bytes >= 1.8e19) return BadBudget(text, "more bytes than a 64-bit count holds");
    budget.bytes = static_cast<uint64_t>(bytes);
    return budget;
  }
  return BadBudget(text, "unknown unit '" + suffix + "'");
}

StatusOr<KvFit> FitKvBlocks(const KvMemoryBudget& budget, const KvLayout& layout,
                            const KvFitInputs& inputs) {
  KvFit fit;
  if (budget.fraction > 0.0) {
    const uint64_t left = inputs.available_bytes > inputs.weights_bytes
                              ? inputs.available_bytes - inputs.weights_bytes
                              : 0;
    if (left == 0) {
      std::string message = "--kv-memory " + budget.text + " asks for a share of the memory left ";
      message +=
          "after the weights, but none is left (available " + FormatBytes(inputs.available_bytes);
      message += ", weights " + FormatBytes(inputs.weights_bytes);
      message += "); give the KV cache an absolute size instead (e.g. --kv-memory 256MiB)";
      return ResourceExhaustedError(std::move(message));
    }
    fit.budget_bytes =
        static_cast<uint64_t>(std::floor(static_cast<double>(left) * budget.fraction));
  } else {
    fit.budget_bytes = budget.bytes;
  }
  const uint64_t bytes_per_block = layout.bytes_per_block();
  const int64_t blocks_needed =
      (std::max<int64_t>(inputs.context_tokens, 1) + layout.block_size - 1) / layout.block_size;
  fit.num_blocks = static_cast<int64_t>(std::min<uint64_t>(
      fit.budget_bytes / bytes_per_block, static_cast<uint64_t>(inputs.max_blocks)));
  if (fit.num_blocks < blocks_needed) {
    std::string message = "KV memory budget " + budget.text + " (" + FormatBytes(fit.budget_bytes);
    message += ") holds " + std::to_string(fit.num_blocks) + " blocks of ";
    message += std::to_string(layout.block_size) + " tokens at " +
               std::to_string(layout.bytes_per_token());
    message += " bytes per token (" + layout.TypeName() + "), but one sequence's context of ";
    message +=
        std::to_string(inputs.context_tokens) + " tokens needs " + std::to_string(blocks_needed);
    message += " blocks (" + FormatBytes(static_cast<uint64_t>(blocks_needed) * bytes_per_block);
    message += "); raise --kv-memory, lower the context length or use a smaller --kv-type";
    return ResourceExhaustedError(std::move(message));
  }
  fit.bytes_used = static_cast<uint64_t>(fit.num_blocks) * bytes_per_block;
  fit.num_tokens = fit.num_blocks * layout.block_size;
  return fit;
}

StatusOr<uint64_t> ParseMemAvailable(std::string_view meminfo) {
  std::istringstream in{std::string(meminfo)};
  std::string key, unit;
  uint64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> key) || key != "MemAvailable:") continue;
    if (!(fields >> value)) break;
    fields >> unit;
    if (unit == "kB") return value * 1024;
    if (unit.empty()) return value;
    break;
  }
  return NotFoundError(
      "no readable MemAvailable line in /proc/meminfo (Linux 3.14+); give "
      "--kv-memory as a size instead of a fraction");
}

StatusOr<uint64_t> ReadMemAvailable(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return NotFoundError(path + ": cannot read the available memory; give --kv-memory as a size");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseMemAvailable(text.str());
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kNames[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), value < 10.0 ? "%.2f %s" : "%.1f %s", value, kNames[unit]);
  return buf;
}

StatusOr<KvFit> FitKvBlocksOnHost(std::string_view budget_text, const KvLayout& layout,
                                  uint64_t weights_bytes, int64_t context_tokens) {
  ASSIGN_OR_RETURN(KvMemoryBudget budget, ParseKvMemoryBudget(budget_text));
  KvFitInputs inputs;
  inputs.context_tokens = context_tokens;
  inputs.weights_bytes = weights_bytes;
  if (budget.fraction > 0.0) {
    ASSIGN_OR_RETURN(inputs.available_bytes, ReadMemAvailable());
  }
  return FitKvBlocks(budget, layout, inputs);
}

}  // namespace kvmesh
