// A GGUF metadata value: scalar, string or (possibly nested) array.
//
// Strings are views into the file's bytes, so a Value is only valid while the
// GgufFile that produced it is alive. Values are immutable once parsed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvmesh::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view ValueTypeName(ValueType type);
bool IsKnownValueType(uint32_t raw);

class Value;

struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> elements;
};

class Value {
 public:
  Value() = default;
  static Value Unsigned(ValueType type, uint64_t v);
  static Value Signed(ValueType type, int64_t v);
  static Value Float(ValueType type, double v);
  static Value Bool(bool v);
  static Value String(std::string_view v);
  static Value MakeArray(Array array);

  ValueType type() const { return type_; }
  bool is_integer() const;
  bool is_float() const { return type_ == ValueType::kFloat32 || type_ == ValueType::kFloat64; }

  // Integer of any width/signedness, if it fits in the requested type.
  std::optional<int64_t> AsInt64() const;
  std::optional<uint64_t> AsUint64() const;
  // Float or integer, widened to double.
  std::optional<double> AsDouble() const;
  std::optional<bool> AsBool() const;
  std::optional<std::string_view> AsString() const;
  const Array* AsArray() const { return type_ == ValueType::kArray ? array_.get() : nullptr; }

  // Human-readable rendering; arrays longer than `max_elements` are elided.
  std::string ToString(size_t max_elements = 8) const;

 private:
  ValueType type_ = ValueType::kUint8;
  union {
    uint64_t u_ = 0;
    int64_t i_;
    double f_;
  };
  std::string_view s_;
  std::shared_ptr<const Array> array_;  // shared: Values are copied cheaply
};

}  // namespace kvmesh::gguf
