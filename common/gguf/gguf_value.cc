#include "common/gguf/gguf_value.h"

#include <cstdio>
#include <limits>

#include "common/log.h"

namespace kvmesh::gguf {

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "UINT8";
    case ValueType::kInt8:
      return "INT8";
    case ValueType::kUint16:
      return "UINT16";
    case ValueType::kInt16:
      return "INT16";
    case ValueType::kUint32:
      return "UINT32";
    case ValueType::kInt32:
      return "INT32";
    case ValueType::kFloat32:
      return "FLOAT32";
    case ValueType::kBool:
      return "BOOL";
    case ValueType::kString:
      return "STRING";
    case ValueType::kArray:
      return "ARRAY";
    case ValueType::kUint64:
      return "UINT64";
    case ValueType::kInt64:
      return "INT64";
    case ValueType::kFloat64:
      return "FLOAT64";
  }
  return "UNKNOWN";
}

bool IsKnownValueType(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::kFloat64); }

Value Value::Unsigned(ValueType type, uint64_t v) {
  Value out;
  out.type_ = type;
  out.u_ = v;
  return out;
}

Value Value::Signed(ValueType type, int64_t v) {
  Value out;
  out.type_ = type;
  out.i_ = v;
  return out;
}

Value Value::Float(ValueType type, double v) {
  Value out;
  out.type_ = type;
  out.f_ = v;
  return out;
}

Value Value::Bool(bool v) {
  Value out;
  out.type_ = ValueType::kBool;
  out.u_ = v ? 1 : 0;
  return out;
}

Value Value::String(std::string_view v) {
  Value out;
  out.type_ = ValueType::kString;
  out.s_ = v;
  return out;
}

Value Value::MakeArray(Array array) {
  Value out;
  out.type_ = ValueType::kArray;
  out.array_ = std::make_shared<const Array>(std::move(array));
  return out;
}

bool Value::is_integer() const {
  switch (type_) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

static bool IsUnsignedType(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 ||
         t == ValueType::kUint64;
}

std::optional<int64_t> Value::AsInt64() const {
  if (!is_integer()) return std::nullopt;
  if (IsUnsignedType(type_)) {
    if (u_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u_);
  }
  return i_;
}

std::optional<uint64_t> Value::AsUint64() const {
  if (!is_integer()) return std::nullopt;
  if (IsUnsignedType(type_)) return u_;
  if (i_ < 0) return std::nullopt;
  return static_cast<uint64_t>(i_);
}

std::optional<double> Value::AsDouble() const {
  if (is_float()) return f_;
  if (IsUnsignedType(type_)) return static_cast<double>(u_);
  if (is_integer()) return static_cast<double>(i_);
  return std::nullopt;
}

std::optional<bool> Value::AsBool() const {
  if (type_ != ValueType::kBool) return std::nullopt;
  return u_ != 0;
}

std::optional<std::string_view> Value::AsString() const {
  if (type_ != ValueType::kString) return std::nullopt;
  return s_;
}

std::string Value::ToString(size_t max_elements) const {
  switch (type_) {
    case ValueType::kString:
      return QuotedText(s_, 200);
    case ValueType::kBool:
      return u_ ? "true" : "false";
    case ValueType::kFloat32:
    case ValueType::kFloat64: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", f_);
      return buf;
    }
    case ValueType::kArray: {
      std::string out = "[";
      const size_t n = array_->elements.size();
      for (size_t i = 0; i < n; ++i) {
        if (i == max_elements && n > max_elements) {
          out += ", ... (" + std::to_string(n) + " elements)";
          break;
        }
        if (i) out += ", ";
        out += array_->elements[i].ToString(max_elements);
      }
      return out + "]";
    }
    default:
      if (IsUnsignedType(type_)) return std::to_string(u_);
      return std::to_string(i_);
  }
}

}  // namespace kvmesh::gguf
