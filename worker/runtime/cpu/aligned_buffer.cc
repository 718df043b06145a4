#include "worker/runtime/cpu/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace kvmesh {
namespace {

constexpr size_t kAlignment = 64;
// Below this, plain aligned_alloc; above, mmap so huge pages can back it.
constexpr size_t kMapThreshold = size_t{4} << 20;
// A transparent huge page covers an aligned 2 MiB; a mapping that starts
// elsewhere loses one at each end.
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

AlignedBuffer::~AlignedBuffer() { Release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

void AlignedBuffer::Release() {
  if (data_ == nullptr) return;
  if (mapped_) {
    munmap(data_, capacity_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = capacity_ = 0;
  mapped_ = false;
}

void AlignedBuffer::Resize(size_t bytes) {
  if (bytes <= capacity_) {
    size_ = bytes;
    return;
  }
  Release();
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded >= kMapThreshold) {
    // Map a huge page more than needed, then give back the unaligned head
    // and the tail, so the buffer starts on a huge-page boundary.
    const size_t mapped = (rounded + kHugePage - 1) / kHugePage * kHugePage;
    void* p = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > start) munmap(p, aligned - start);
    const size_t tail = start + mapped + kHugePage - (aligned + mapped);
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + mapped), tail);
    p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(p, mapped, MADV_HUGEPAGE);  // a hint; ignored where THP is off
#endif
    data_ = static_cast<uint8_t*>(p);
    mapped_ = true;
    size_ = bytes;
    capacity_ = mapped;
    return;
  } else {
    data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
  }
  size_ = bytes;
  capacity_ = rounded;
}

}  // namespace kvmesh
