#include "worker/kernels/cpu/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KVMESH_X86 1
#endif

namespace kvmesh::kernels {
namespace {

struct Detected {
  Isa isa = Isa::kScalar;
  bool avx512_bf16 = false;
};

#ifdef KVMESH_X86
// F16C is not among the names every compiler's __builtin_cpu_supports knows,
// so read CPUID leaf 1 (ECX bit 29) directly. Its state is the AVX state,
// whose OS support the "avx2" check below already covers.
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & (1u << 29)) != 0;
}
#endif

Detected Detect() {
  Detected d;
#ifdef KVMESH_X86
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
  if (!avx2) return d;
  d.isa = Isa::kAvx2;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vnni");
  if (!avx512) return d;
  d.isa = Isa::kAvx512;
  d.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  return d;
}

const Detected& Host() {
  static const Detected detected = Detect();
  return detected;
}

Isa ReadActive() {
  const Isa host = Host().isa;
  const char* env = std::getenv("KVMESH_CPU_ISA");
  if (env == nullptr || *env == '\0') return host;
  const std::optional<Isa> wanted = ParseIsa(env);
  if (!wanted) {
    std::fprintf(stderr, "kvmesh: ignoring KVMESH_CPU_ISA=%s (expected scalar, avx2 or avx512)\n",
                 env);
    return host;
  }
  return static_cast<int>(*wanted) < static_cast<int>(host) ? *wanted : host;
}

}  // namespace

Isa HostIsa() { return Host().isa; }

Isa ActiveIsa() {
  static const Isa active = ReadActive();
  return active;
}

bool IsaSupported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(HostIsa()); }

bool HasAvx512Bf16() { return Host().avx512_bf16; }

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<Isa> ParseIsa(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return std::nullopt;
}

}  // namespace kvmesh::kernels
