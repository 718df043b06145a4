// Comparing secrets (API keys, tokens) in time that does not depend on how
// much of a guess is right: every byte of the longer string is looked at and
// differences are OR-ed together, with no early exit. The length itself may
// show (as it would through any protocol).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace kvmesh {

inline bool SecretsEqual(std::string_view a, std::string_view b) {
  const size_t length = std::max(a.size(), b.size());
  // volatile: the compiler may not turn the loop into an early-exit compare.
  volatile unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace kvmesh
