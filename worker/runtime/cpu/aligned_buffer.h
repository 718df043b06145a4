// AlignedBuffer: an owned, 64-byte aligned block of bytes for kernel operands
// (repacked weights, converted activations). Large buffers come from
// anonymous mmap, aligned to 2 MiB, with transparent huge pages requested,
// which cuts the TLB misses of streaming hundreds of megabytes of weights per
// token. Move-only;
// the memory is released in the destructor. Not thread-safe to resize, safe
// to read concurrently.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvmesh {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { Resize(bytes); }
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Ensures room for `bytes`; contents are not kept when it grows. New memory
  // is zero.
  void Resize(size_t bytes);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;      // bytes asked for
  size_t capacity_ = 0;  // bytes held
  bool mapped_ = false;  // from mmap (else aligned_alloc)
};

}  // namespace kvmesh
