// GgufWriter: builds a GGUF v3 file in memory (metadata in insertion order,
// tensors laid out at general.alignment) and writes it out. Used by the
// synthetic-model tool and by tests that need small or deliberately broken
// files. Not thread-safe; one writer per file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/gguf/gguf_value.h"
#include "common/status.h"
#include "common/tensor_type.h"

namespace kvmesh::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

  void SetUint32(const std::string& key, uint32_t v);
  void SetInt32(const std::string& key, int32_t v);
  void SetUint64(const std::string& key, uint64_t v);
  void SetFloat32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, const std::string& v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetFloat32Array(const std::string& key, const std::vector<float>& v);
  void SetInt32Array(const std::string& key, const std::vector<int32_t>& v);
  // A value as read from another file (GgufFile::metadata()), copied.
  void SetValue(const std::string& key, const Value& v);
  // Appends already-encoded bytes for (key, type, payload): for tests that need
  // values the typed setters cannot express.
  void SetRaw(const std::string& key, ValueType type, std::vector<uint8_t> payload);

  // `data` must hold exactly the bytes of `dims` elements of `type`.
  Status AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                   std::span<const uint8_t> data);
  // The same, taking the bytes without a copy (large synthetic models).
  Status AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                   std::vector<uint8_t>&& data);

  std::vector<uint8_t> Serialize() const;
  // Writes the same bytes as Serialize, streaming the tensors (no second copy
  // of the data in memory).
  Status WriteFile(const std::string& path) const;

 private:
  struct Entry {
    std::string key;
    ValueType type;
    std::vector<uint8_t> payload;
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;
  };
  void Put(const std::string& key, ValueType type, std::vector<uint8_t> payload);
  // Everything before the first tensor's data, padded to the alignment.
  std::vector<uint8_t> SerializeHeader() const;

  uint64_t alignment_;
  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

}  // namespace kvmesh::gguf
