#include "common/gguf/mapped_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvmesh::gguf {

StatusOr<std::unique_ptr<MappedRegion>> MappedRegion::Map(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string what = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? NotFoundError(what) : InvalidArgumentError(what);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return InvalidArgumentError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::unique_ptr<MappedRegion>(new MappedRegion(nullptr, 0));
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file referenced
  if (addr == MAP_FAILED) {
    return InvalidArgumentError(path + ": mmap failed: " + std::strerror(err));
  }
  return std::unique_ptr<MappedRegion>(new MappedRegion(static_cast<const uint8_t*>(addr), size));
}

MappedRegion::~MappedRegion() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kvmesh::gguf
