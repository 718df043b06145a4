#include "router/gateway/json_fields.h"

#include <sstream>

namespace kvmesh::router::gateway {
namespace {

// A value for an error message: numbers as written, strings quoted and
// shortened, containers by type only (they can be huge).
std::string DescribeValue(const nlohmann::json& value) {
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  if (value.is_string()) {
    constexpr size_t kMaxChars = 40;
    const std::string& text = value.get_ref<const std::string&>();
    std::string out = "\"";
    out += text.substr(0, kMaxChars);
    if (text.size() > kMaxChars) out += "...";
    out += '"';
    return out;
  }
  return std::string(JsonTypeName(value));
}

std::string FormatRange(double min, double max) {
  std::ostringstream text;
  text << "must be between " << min << " and " << max;
  return text.str();
}

}  // namespace

std::string_view JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::null:
      return "null";
    default:
      return "binary";
  }
}

std::string IndexedPath(std::string_view base, size_t index) {
  std::string path(base);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

Status NotAnObject(const std::string& path, const nlohmann::json& value) {
  std::string message = "field \"";
  message += path;
  message += "\" must be an object, got ";
  message += JsonTypeName(value);
  return InvalidArgumentError(std::move(message));
}

StatusOr<nlohmann::json> ParseJsonObject(std::string_view body) {
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& error) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, …"
    // (or out_of_range.406 for a number past a double, "1e999"); the
    // bracketed id means nothing to a client.
    std::string_view what = error.what();
    size_t id_end = what.find("] ");
    if (id_end != std::string_view::npos) what.remove_prefix(id_end + 2);
    std::string message = "request body is not valid JSON: ";
    message += what;
    return InvalidArgumentError(std::move(message));
  }
  if (!value.is_object()) {
    std::string message = "request body must be a JSON object, got ";
    message += JsonTypeName(value);
    return InvalidArgumentError(std::move(message));
  }
  return value;
}

const nlohmann::json* JsonObjectReader::Find(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonObjectReader::FieldName(std::string_view key) const {
  std::string name = path_;
  if (!name.empty()) name += '.';
  name += key;
  return name;
}

Status JsonObjectReader::TypeError(std::string_view key, std::string_view expected) const {
  const nlohmann::json* value = Find(key);
  std::string message = "field \"";
  message += FieldName(key);
  message += "\" must be ";
  message += expected;
  message += ", got ";
  message += value == nullptr ? std::string_view("null") : JsonTypeName(*value);
  return InvalidArgumentError(std::move(message));
}

Status JsonObjectReader::ValueError(std::string_view key, std::string_view requirement,
                                    const nlohmann::json& value) const {
  std::string message = "field \"";
  message += FieldName(key);
  message += "\" ";
  message += requirement;
  message += ", got ";
  message += DescribeValue(value);
  return InvalidArgumentError(std::move(message));
}

Status JsonObjectReader::ValueError(std::string_view key, std::string_view requirement) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return Missing(key);
  return ValueError(key, requirement, *value);
}

Status JsonObjectReader::AtMost(std::string_view key, const nlohmann::json& array,
                                size_t limit) const {
  if (!array.is_array() || array.size() <= limit) return Status::Ok();
  return InvalidArgumentError("field \"" + FieldName(key) + "\" has " +
                              std::to_string(array.size()) + " entries; at most " +
                              std::to_string(limit));
}

Status JsonObjectReader::Missing(std::string_view key) const {
  std::string message = "field \"";
  message += FieldName(key);
  message += "\" is required";
  return InvalidArgumentError(std::move(message));
}

Status JsonObjectReader::String(std::string_view key, std::string* out) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return Status::Ok();
  if (!value->is_string()) return TypeError(key, "a string");
  *out = value->get<std::string>();
  return Status::Ok();
}

Status JsonObjectReader::Bool(std::string_view key, bool* out) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return Status::Ok();
  if (!value->is_boolean()) return TypeError(key, "a boolean");
  *out = value->get<bool>();
  return Status::Ok();
}

Status JsonObjectReader::Number(std::string_view key, std::optional<double>* out) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return Status::Ok();
  if (!value->is_number()) return TypeError(key, "a number");
  *out = value->get<double>();
  return Status::Ok();
}

Status JsonObjectReader::Integer(std::string_view key, std::optional<int64_t>* out) const {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return Status::Ok();
  if (value->is_number_unsigned()) {
    uint64_t unsigned_value = value->get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(INT64_MAX)) {
      return ValueError(key, "is too large", *value);
    }
    *out = static_cast<int64_t>(unsigned_value);
    return Status::Ok();
  }
  if (value->is_number_integer()) {
    *out = value->get<int64_t>();
    return Status::Ok();
  }
  if (value->is_number()) return ValueError(key, "must be an integer", *value);
  return TypeError(key, "an integer");
}

Status JsonObjectReader::NumberInRange(std::string_view key, double min, double max,
                                       std::optional<double>* out) const {
  std::optional<double> number;
  RETURN_IF_ERROR(Number(key, &number));
  if (number.has_value() && !(*number >= min && *number <= max)) {
    return ValueError(key, FormatRange(min, max), *Find(key));
  }
  if (number.has_value()) *out = number;
  return Status::Ok();
}

Status JsonObjectReader::IntegerInRange(std::string_view key, int64_t min, int64_t max,
                                        std::optional<int64_t>* out) const {
  std::optional<int64_t> integer;
  RETURN_IF_ERROR(Integer(key, &integer));
  if (integer.has_value() && (*integer < min || *integer > max)) {
    std::string requirement = "must be between ";
    requirement += std::to_string(min);
    requirement += " and ";
    requirement += std::to_string(max);
    return ValueError(key, requirement, *Find(key));
  }
  if (integer.has_value()) *out = integer;
  return Status::Ok();
}

}  // namespace kvmesh::router::gateway
