// CHECK: for invariants only (a broken invariant is a bug in kvmesh, not bad
// input). Bad input is reported with a Status; see common/status.h.
#pragma once

#include <cstdio>
#include <cstdlib>

#define KVMESH_CHECK(cond)                                                                \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
