#include "common/gguf/gguf_file.h"

#include <cstring>
#include <limits>
#include <utility>

#include "common/gguf/mapped_region.h"

namespace kvmesh::gguf {

std::string TensorInfo::ShapeString() const {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

// Parser: a bounds-checked cursor over the file. Every read checks the bytes
// that remain first; every failure names the field and the offset where it
// starts.
class GgufFile::Parser {
 public:
  Parser(GgufFile& file, const Limits& limits)
      : file_(file), bytes_(file.bytes_), limits_(limits) {}

  Status Run() {
    uint32_t magic = 0;
    RETURN_IF_ERROR(ReadPod("magic", &magic));
    if (magic != kMagic) {
      return Error(0, "magic", "not a GGUF file (first 4 bytes are not \"GGUF\")");
    }
    RETURN_IF_ERROR(ReadPod("version", &file_.version_));
    if (file_.version_ == 1) {
      return Error(4, "version", "GGUF version 1 is not supported (only versions 2 and 3)");
    }
    if (file_.version_ != 2 && file_.version_ != 3) {
      const uint32_t swapped = __builtin_bswap32(file_.version_);
      if (swapped == 2 || swapped == 3) {
        return Error(4, "version", "big-endian GGUF files are not supported");
      }
      return Error(4, "version",
                   "unsupported GGUF version " + std::to_string(file_.version_) +
                       " (only versions 2 and 3)");
    }
    uint64_t tensor_count = 0, kv_count = 0;
    RETURN_IF_ERROR(ReadPod("tensor_count", &tensor_count));
    RETURN_IF_ERROR(ReadPod("metadata_kv_count", &kv_count));
    if (kv_count > limits_.max_kv_count) {
      return Error(16, "metadata_kv_count",
                   "metadata_kv_count " + std::to_string(kv_count) + " exceeds the limit " +
                       std::to_string(limits_.max_kv_count));
    }
    if (tensor_count > limits_.max_tensor_count) {
      return Error(8, "tensor_count",
                   "tensor_count " + std::to_string(tensor_count) + " exceeds the limit " +
                       std::to_string(limits_.max_tensor_count));
    }
    // Each key/value takes at least 12 bytes (key length + value type), each
    // tensor entry at least 24: reject counts the remaining bytes cannot hold
    // before reserving memory for them.
    if (kv_count > Remaining() / 12) {
      return Error(16, "metadata_kv_count",
                   std::to_string(kv_count) + " key/value pairs cannot fit in the " +
                       std::to_string(Remaining()) + " bytes that follow the header");
    }
    file_.metadata_.reserve(kv_count);
    for (uint64_t i = 0; i < kv_count; ++i) {
      RETURN_IF_ERROR(ReadKeyValue(i));
    }
    RETURN_IF_ERROR(ApplyAlignment());
    if (tensor_count > Remaining() / 24) {
      return Error(8, "tensor_count",
                   std::to_string(tensor_count) + " tensor entries cannot fit in the " +
                       std::to_string(Remaining()) + " bytes that follow the metadata");
    }
    file_.tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) {
      RETURN_IF_ERROR(ReadTensorInfo(i));
    }
    // The data section starts at the next multiple of the alignment.
    const uint64_t align = file_.alignment_;
    const uint64_t data_offset = (pos_ + align - 1) / align * align;
    if (tensor_count > 0 && data_offset > bytes_.size()) {
      return Error(pos_, "data section",
                   "data section would start at " + std::to_string(data_offset) +
                       ", past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
    }
    file_.data_offset_ = data_offset;
    for (TensorInfo& t : file_.tensors_) {
      RETURN_IF_ERROR(PlaceTensor(t));
    }
    return Status::Ok();
  }

 private:
  uint64_t Remaining() const { return bytes_.size() - pos_; }

  Status Error(uint64_t offset, std::string_view field, const std::string& what) const {
    return DataLossError(file_.name_ + ": " + std::string(field) + " at offset " +
                         std::to_string(offset) + ": " + what);
  }

  Status Truncated(std::string_view field, uint64_t need) const {
    return Error(pos_, field,
                 "file is truncated: need " + std::to_string(need) + " bytes, " +
                     std::to_string(Remaining()) + " remain (file size " +
                     std::to_string(bytes_.size()) + ")");
  }

  template <typename T>
  Status ReadPod(std::string_view field, T* out) {
    if (Remaining() < sizeof(T)) return Truncated(field, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string_view field, std::string_view* out) {
    const uint64_t start = pos_;
    uint64_t len = 0;
    RETURN_IF_ERROR(ReadPod(field, &len));
    if (len > limits_.max_string_bytes) {
      return Error(start, field,
                   "string length " + std::to_string(len) + " exceeds the limit " +
                       std::to_string(limits_.max_string_bytes));
    }
    if (len > Remaining()) return Truncated(field, len);
    *out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status ReadValue(const std::string& field, ValueType type, int depth, Value* out) {
    switch (type) {
      case ValueType::kUint8:
        return ReadUnsigned<uint8_t>(field, type, out);
      case ValueType::kUint16:
        return ReadUnsigned<uint16_t>(field, type, out);
      case ValueType::kUint32:
        return ReadUnsigned<uint32_t>(field, type, out);
      case ValueType::kUint64:
        return ReadUnsigned<uint64_t>(field, type, out);
      case ValueType::kInt8:
        return ReadSigned<int8_t>(field, type, out);
      case ValueType::kInt16:
        return ReadSigned<int16_t>(field, type, out);
      case ValueType::kInt32:
        return ReadSigned<int32_t>(field, type, out);
      case ValueType::kInt64:
        return ReadSigned<int64_t>(field, type, out);
      case ValueType::kFloat32: {
        float v = 0;
        RETURN_IF_ERROR(ReadPod(field, &v));
        *out = Value::Float(type, v);
        return Status::Ok();
      }
      case ValueType::kFloat64: {
        double v = 0;
        RETURN_IF_ERROR(ReadPod(field, &v));
        *out = Value::Float(type, v);
        return Status::Ok();
      }
      case ValueType::kBool: {
        const uint64_t at = pos_;
        uint8_t v = 0;
        RETURN_IF_ERROR(ReadPod(field, &v));
        if (v > 1) return Error(at, field, "bool value " + std::to_string(v) + " is not 0 or 1");
        *out = Value::Bool(v != 0);
        return Status::Ok();
      }
      case ValueType::kString: {
        std::string_view s;
        RETURN_IF_ERROR(ReadString(field, &s));
        *out = Value::String(s);
        return Status::Ok();
      }
      case ValueType::kArray:
        return ReadArray(field, depth, out);
    }
    return Error(pos_, field, "unknown value type");
  }

  template <typename T>
  Status ReadUnsigned(const std::string& field, ValueType type, Value* out) {
    T v{};
    RETURN_IF_ERROR(ReadPod(field, &v));
    *out = Value::Unsigned(type, v);
    return Status::Ok();
  }

  template <typename T>
  Status ReadSigned(const std::string& field, ValueType type, Value* out) {
    T v{};
    RETURN_IF_ERROR(ReadPod(field, &v));
    *out = Value::Signed(type, v);
    return Status::Ok();
  }

  static uint64_t MinEncodedSize(ValueType t) {
    switch (t) {
      case ValueType::kUint8:
      case ValueType::kInt8:
      case ValueType::kBool:
        return 1;
      case ValueType::kUint16:
      case ValueType::kInt16:
        return 2;
      case ValueType::kUint32:
      case ValueType::kInt32:
      case ValueType::kFloat32:
        return 4;
      case ValueType::kUint64:
      case ValueType::kInt64:
      case ValueType::kFloat64:
      case ValueType::kString:
        return 8;
      case ValueType::kArray:
        return 12;
    }
    return 1;
  }

  Status ReadArray(const std::string& field, int depth, Value* out) {
    const uint64_t start = pos_;
    if (depth >= limits_.max_array_depth) {
      return Error(start, field,
                   "arrays nested deeper than " + std::to_string(limits_.max_array_depth));
    }
    uint32_t raw_type = 0;
    RETURN_IF_ERROR(ReadPod(field + " (array element type)", &raw_type));
    if (!IsKnownValueType(raw_type)) {
      return Error(start, field, "unknown array element type " + std::to_string(raw_type));
    }
    const auto elem_type = static_cast<ValueType>(raw_type);
    uint64_t count = 0;
    RETURN_IF_ERROR(ReadPod(field + " (array length)", &count));
    if (count > Remaining() / MinEncodedSize(elem_type)) {
      return Error(start, field,
                   "array of " + std::to_string(count) + " " +
                       std::string(ValueTypeName(elem_type)) + " elements cannot fit in the " +
                       std::to_string(Remaining()) + " bytes that remain");
    }
    if (count > limits_.max_array_elements - array_elements_) {
      return Error(start, field,
                   "arrays hold more than " + std::to_string(limits_.max_array_elements) +
                       " elements in total");
    }
    array_elements_ += count;
    Array array;
    array.element_type = elem_type;
    array.elements.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      RETURN_IF_ERROR(ReadValue(field, elem_type, depth + 1, &array.elements[i]));
    }
    *out = Value::MakeArray(std::move(array));
    return Status::Ok();
  }

  Status ReadKeyValue(uint64_t index) {
    const uint64_t start = pos_;
    std::string_view key;
    RETURN_IF_ERROR(ReadString("metadata key #" + std::to_string(index), &key));
    const std::string field = "metadata \"" + std::string(key.substr(0, 120)) + "\"";
    if (key.empty()) return Error(start, field, "empty key");
    if (file_.metadata_index_.count(key)) return Error(start, field, "duplicate key");
    const uint64_t type_at = pos_;
    uint32_t raw_type = 0;
    RETURN_IF_ERROR(ReadPod(field + " (value type)", &raw_type));
    if (!IsKnownValueType(raw_type)) {
      return Error(type_at, field, "unknown value type " + std::to_string(raw_type));
    }
    KeyValue kv;
    kv.key = key;
    kv.offset = start;
    RETURN_IF_ERROR(ReadValue(field, static_cast<ValueType>(raw_type), 0, &kv.value));
    file_.metadata_index_.emplace(key, file_.metadata_.size());
    file_.metadata_.push_back(std::move(kv));
    return Status::Ok();
  }

  Status ApplyAlignment() {
    auto it = file_.metadata_index_.find("general.alignment");
    if (it == file_.metadata_index_.end()) return Status::Ok();
    const KeyValue& kv = file_.metadata_[it->second];
    const std::string field = "metadata \"general.alignment\"";
    if (kv.value.type() != ValueType::kUint32) {
      return Error(kv.offset, field,
                   "must be UINT32, found " + std::string(ValueTypeName(kv.value.type())));
    }
    const uint64_t align = *kv.value.AsUint64();
    if (align == 0 || (align & (align - 1)) != 0) {
      return Error(kv.offset, field,
                   "alignment " + std::to_string(align) + " is not a power of two");
    }
    file_.alignment_ = align;
    return Status::Ok();
  }

  Status ReadTensorInfo(uint64_t index) {
    const uint64_t start = pos_;
    TensorInfo t;
    RETURN_IF_ERROR(ReadString("tensor #" + std::to_string(index) + " name", &t.name));
    const std::string field = "tensor \"" + std::string(t.name.substr(0, 120)) + "\"";
    if (t.name.empty()) return Error(start, field, "empty tensor name");
    if (file_.tensor_index_.count(t.name)) return Error(start, field, "duplicate tensor name");
    const uint64_t dims_at = pos_;
    uint32_t n_dims = 0;
    RETURN_IF_ERROR(ReadPod(field + " n_dims", &n_dims));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return Error(
          dims_at, field,
          "n_dims " + std::to_string(n_dims) + " is outside 1.." + std::to_string(kMaxDims));
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t at = pos_;
      uint64_t dim = 0;
      RETURN_IF_ERROR(ReadPod(field + " dims", &dim));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error(at, field,
                     "dimension " + std::to_string(d) + " = " + std::to_string(dim) +
                         " is not a positive int64");
      }
      if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
        return Error(at, field, "element count overflows int64");
      }
      elements *= dim;
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t type_at = pos_;
    RETURN_IF_ERROR(ReadPod(field + " type", &t.type_id));
    const auto info = LookupTensorType(t.type_id);
    if (!info) {
      return Error(type_at, field, "unknown tensor type id " + std::to_string(t.type_id));
    }
    if (IsKvOnlyTensorType(t.type_id)) {
      return Error(type_at, field,
                   "tensor type id " + std::to_string(t.type_id) + " (" + std::string(info->name) +
                       ") is a KV page type, which no file holds");
    }
    if (static_cast<uint64_t>(t.dims[0]) % info->block_size != 0) {
      return Error(dims_at, field,
                   "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                       std::string(info->name) + " block size " + std::to_string(info->block_size));
    }
    const uint64_t blocks = elements / info->block_size;
    if (blocks > std::numeric_limits<uint64_t>::max() / info->bytes_per_block) {
      return Error(dims_at, field, "byte size overflows");
    }
    t.num_elements = elements;
    t.num_bytes = blocks * info->bytes_per_block;
    const uint64_t offset_at = pos_;
    RETURN_IF_ERROR(ReadPod(field + " offset", &t.offset));
    if (t.offset % file_.alignment_ != 0) {
      return Error(offset_at, field,
                   "data offset " + std::to_string(t.offset) +
                       " is not a multiple of the alignment " + std::to_string(file_.alignment_));
    }
    file_.tensor_index_.emplace(t.name, file_.tensors_.size());
    offsets_.push_back(offset_at);
    file_.tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  Status PlaceTensor(TensorInfo& t) {
    const uint64_t size = bytes_.size();
    const uint64_t data_offset = file_.data_offset_;
    const uint64_t at = offsets_[&t - file_.tensors_.data()];
    const std::string field = "tensor \"" + std::string(t.name.substr(0, 120)) + "\"";
    if (t.offset > size - data_offset || t.num_bytes > size - data_offset - t.offset) {
      return Error(at, field,
                   "data [" + std::to_string(data_offset) + " + " + std::to_string(t.offset) +
                       ", " + std::to_string(t.num_bytes) +
                       " bytes) extends past the end of the file (" + std::to_string(size) +
                       " bytes)");
    }
    t.data = bytes_.data() + data_offset + t.offset;
    return Status::Ok();
  }

  GgufFile& file_;
  std::span<const uint8_t> bytes_;
  const Limits& limits_;
  uint64_t pos_ = 0;
  uint64_t array_elements_ = 0;
  std::vector<uint64_t> offsets_;  // file offset of each tensor's offset field
};

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path, const Limits& limits) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> region, MappedRegion::Map(path));
  const auto bytes = region->bytes();
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = path;
  file->bytes_ = bytes;
  file->mapping_ = std::move(region);
  Parser parser(*file, limits);
  RETURN_IF_ERROR(parser.Run());
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(std::string name,
                                                    std::span<const uint8_t> bytes,
                                                    const Limits& limits) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->bytes_ = bytes;
  Parser parser(*file, limits);
  RETURN_IF_ERROR(parser.Run());
  return file;
}

GgufFile::~GgufFile() = default;

const Value* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
Status Missing(const std::string& file, std::string_view key) {
  return NotFoundError(file + ": metadata key \"" + std::string(key) + "\" is missing");
}
Status WrongType(const std::string& file, std::string_view key, const Value& v,
                 std::string_view want) {
  return InvalidArgumentError(file + ": metadata key \"" + std::string(key) + "\" has type " +
                              std::string(ValueTypeName(v.type())) + ", expected " +
                              std::string(want));
}
}  // namespace

StatusOr<std::string_view> GgufFile::GetString(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  auto s = v->AsString();
  if (!s) return WrongType(name_, key, *v, "STRING");
  return *s;
}

StatusOr<uint64_t> GgufFile::GetUint(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  auto u = v->AsUint64();
  if (!u) return WrongType(name_, key, *v, "a non-negative integer");
  return *u;
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  auto i = v->AsInt64();
  if (!i) return WrongType(name_, key, *v, "an integer");
  return *i;
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  auto f = v->AsDouble();
  if (!f) return WrongType(name_, key, *v, "a number");
  return *f;
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  auto b = v->AsBool();
  if (!b) return WrongType(name_, key, *v, "BOOL");
  return *b;
}

StatusOr<const Array*> GgufFile::GetArray(std::string_view key, ValueType element_type) const {
  const Value* v = Find(key);
  if (!v) return Missing(name_, key);
  const Array* a = v->AsArray();
  if (!a) return WrongType(name_, key, *v, "ARRAY");
  if (a->element_type != element_type) {
    return InvalidArgumentError(name_ + ": metadata key \"" + std::string(key) +
                                "\" is an array of " + std::string(ValueTypeName(a->element_type)) +
                                ", expected " + std::string(ValueTypeName(element_type)));
  }
  return a;
}

}  // namespace kvmesh::gguf
