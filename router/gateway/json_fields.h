// Typed reads of JSON request fields, with errors that name the field
// ("field \"messages[1].content\" must be a string or an array of content
// parts, got number") so a client can fix its request from the 400 alone.
//
// A JsonObjectReader only borrows the object it reads; it is a cheap value
// for one thread. The free functions are pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvmesh::router::gateway {

// "string", "number", "boolean", "array", "object" or "null".
std::string_view JsonTypeName(const nlohmann::json& value);

// Parses a request body that must be one JSON object. INVALID_ARGUMENT with
// the parser's position ("request body is not valid JSON: parse error at line
// 1, column 9: …") or the type found otherwise.
StatusOr<nlohmann::json> ParseJsonObject(std::string_view body);

// "base[index]", the name of an array element in messages.
std::string IndexedPath(std::string_view base, size_t index);

// INVALID_ARGUMENT: field "<path>" must be an object, got <type>.
Status NotAnObject(const std::string& path, const nlohmann::json& value);

// The most messages (or Responses input items) and tools one request may
// carry; past them the request is a 400 naming the limit.
inline constexpr size_t kMaxMessages = 10000;
inline constexpr size_t kMaxTools = 1024;

class JsonObjectReader {
 public:
  // `path` names `object` in messages: "" for the request body,
  // "messages[2]" for an element of an array.
  JsonObjectReader(const nlohmann::json& object, std::string path)
      : object_(object), path_(std::move(path)) {}

  // The value of `key`, or nullptr when it is absent or null (both mean
  // "not given" in these APIs).
  const nlohmann::json* Find(std::string_view key) const;

  // "key" or "path.key", as messages name it.
  std::string FieldName(std::string_view key) const;

  // INVALID_ARGUMENT: field "<name>" must be <expected>, got <type>.
  Status TypeError(std::string_view key, std::string_view expected) const;
  // INVALID_ARGUMENT: field "<name>" <requirement>, got <value>.
  Status ValueError(std::string_view key, std::string_view requirement,
                    const nlohmann::json& value) const;
  // The same for the value this object holds at `key`; Missing(key) when it
  // holds none (or null). Never index a const json with a key it may lack:
  // nlohmann's const operator[] reads past the map then.
  Status ValueError(std::string_view key, std::string_view requirement) const;
  // INVALID_ARGUMENT: field "<name>" is required.
  Status Missing(std::string_view key) const;
  // INVALID_ARGUMENT when the array `key` has more than `limit` entries:
  // field "<name>" has N entries; at most LIMIT.
  Status AtMost(std::string_view key, const nlohmann::json& array, size_t limit) const;

  // Each read leaves `out` as it was when the field is absent or null.
  Status String(std::string_view key, std::string* out) const;
  Status Bool(std::string_view key, bool* out) const;
  Status Number(std::string_view key, std::optional<double>* out) const;
  // Integers only: 3, not 3.5 (nor 3.0, which JSON parsers keep as a float).
  Status Integer(std::string_view key, std::optional<int64_t>* out) const;

  // Number() plus a range check, `min <= value <= max`.
  Status NumberInRange(std::string_view key, double min, double max,
                       std::optional<double>* out) const;
  // Integer() plus a range check.
  Status IntegerInRange(std::string_view key, int64_t min, int64_t max,
                        std::optional<int64_t>* out) const;

 private:
  const nlohmann::json& object_;
  std::string path_;
};

}  // namespace kvmesh::router::gateway
