#include "worker/kernels/cpu/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KVMESH_X86 1
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define KVMESH_LINUX_X86_64 1
#endif

namespace kvmesh::kernels {
namespace {

struct Detected {
  Isa isa = Isa::kScalar;
  bool avx512_bf16 = false;
  bool amx = false;
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

// AMX: CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25 (AMX-INT8); XCR0 bits 17
// and 18 (tile config and data state) enabled by the OS; and, on Linux, the
// process must ask for the tile data state before its first use, or the
// first tile instruction faults.
bool HasAmxTileInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if ((edx & (3u << 24)) != (3u << 24)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
#ifdef KVMESH_LINUX_X86_64
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
  return false;
#endif
}

bool AmxTurnedOff() {
  const char* env = std::getenv("KVMESH_CPU_AMX");
  if (env == nullptr || *env == '\0' || std::string(env) == "on") return false;
  if (std::string(env) != "off") {
    std::fprintf(stderr, "kvmesh: ignoring KVMESH_CPU_AMX=%s (expected on or off)\n", env);
    return false;
  }
  return true;
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
  d.amx = !AmxTurnedOff() && HasAmxTileInt8();
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

bool HasAmx() { return Host().amx; }

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
