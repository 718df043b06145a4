// MappedRegion: a read-only memory mapping of a whole file (RAII: unmapped on
// destruction). An empty file maps to an empty span.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"

namespace kvmesh::gguf {

class MappedRegion {
 public:
  static StatusOr<std::unique_ptr<MappedRegion>> Map(const std::string& path);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedRegion(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

}  // namespace kvmesh::gguf
