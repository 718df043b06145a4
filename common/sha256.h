// SHA-256 of files and buffers (OpenSSL), for model integrity checks.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"

namespace kvmesh {

// Lower-case hex digest of `bytes`.
std::string Sha256Hex(std::span<const uint8_t> bytes);

// Lower-case hex digest of the file at `path`, read in chunks.
StatusOr<std::string> Sha256File(const std::string& path);

// Checks `path` against `expected_hex` (case-insensitive). When `expected_hex`
// is empty, reads the digest from the sidecar file `path + ".sha256"` (first
// whitespace-separated word, as sha256sum writes it). Returns the verified
// digest, or an error naming the file and both digests.
StatusOr<std::string> VerifySha256(const std::string& path, const std::string& expected_hex);

}  // namespace kvmesh
