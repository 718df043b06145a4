// GgufFile: a parsed, validated view of a GGUF file (versions 2 and 3).
//
// Open() maps the file read-only and parses the header, every metadata
// key/value (all types, nested arrays) and the tensor table. Every count,
// length, offset and dimension is checked against the bytes that remain and
// for arithmetic overflow *before* it is used, so a truncated, corrupted or
// hostile file yields a Status naming the file, the field and the byte offset,
// never a crash or an out-of-bounds read.
//
// After a successful Open() every tensor's data range lies inside the file,
// aligned to general.alignment. The object is immutable and may be read from
// any number of threads; the mapping lives as long as the object.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/gguf/gguf_value.h"
#include "common/status.h"
#include "common/tensor_type.h"

namespace kvmesh::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t offset = 0;  // file offset of the key's length prefix
};

struct TensorInfo {
  std::string_view name;
  uint32_t type_id = 0;       // raw id; see TensorTypeName()
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (row) dimension
  uint64_t offset = 0;        // relative to the data section
  uint64_t num_elements = 0;
  uint64_t num_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping

  TensorType type() const { return static_cast<TensorType>(type_id); }
  std::string ShapeString() const;  // "[64, 512]"
};

// Resource limits a reader enforces before allocating; defaults are far above
// any real model but stop a hostile header from asking for terabytes.
struct Limits {
  uint64_t max_string_bytes = 64ull << 20;
  uint64_t max_array_elements = 1ull << 26;  // over all arrays of the file
  uint64_t max_kv_count = 1ull << 20;
  uint64_t max_tensor_count = 1ull << 20;
  int max_array_depth = 8;
};

class GgufFile {
 public:
  // Maps and parses `path`. The file stays mapped until the object is destroyed.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path,
                                                  const Limits& limits = {});
  // Parses bytes the caller keeps alive for the lifetime of the result
  // (`name` is used in messages). Used by tests and the fuzzer.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(std::string name, std::span<const uint8_t> bytes,
                                                   const Limits& limits = {});

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* Find(std::string_view key) const;

  // Typed lookups: NotFound when absent, InvalidArgument naming the key and the
  // actual type when the type does not fit.
  StatusOr<std::string_view> GetString(std::string_view key) const;
  StatusOr<uint64_t> GetUint(std::string_view key) const;
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetFloat(std::string_view key) const;
  StatusOr<bool> GetBool(std::string_view key) const;
  StatusOr<const Array*> GetArray(std::string_view key, ValueType element_type) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  class Parser;

  std::string name_;
  std::unique_ptr<class MappedRegion> mapping_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string_view, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace kvmesh::gguf
