// Which SIMD instruction sets the CPU kernels may use, decided once per
// process.
//
// Kernels come in three tiers; each tier's files are compiled with their own
// target flags (see CMakeLists.txt), and a tier is only ever called when
// HostIsa() says the CPU (and the OS, for the wider register state) supports
// it:
//
//   kScalar  portable C++; the references every other tier is tested against.
//   kAvx2    AVX2 + FMA + F16C (Haswell and later, Zen and later).
//   kAvx512  AVX-512 F/BW/VL/DQ with VNNI (Ice Lake, Sapphire Rapids, Zen 4
//            and later). BF16 instructions are used by the BF16 kernels where
//            the CPU also has AVX512_BF16 (HasAvx512Bf16()).
//
// ActiveIsa() is HostIsa() capped by the environment variable KVMESH_CPU_ISA
// (scalar, avx2 or avx512; read once), so a user or a test run can force the
// slower paths. Code that must compare tiers in one process (the parity
// tests) asks for a tier explicitly instead. All functions are thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace kvmesh::kernels {

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The widest tier this CPU and OS support.
Isa HostIsa();

// HostIsa(), lowered to KVMESH_CPU_ISA when that names a narrower tier. An
// unknown value is reported once on stderr and ignored.
Isa ActiveIsa();

// True when `isa` may run here (isa <= HostIsa()).
bool IsaSupported(Isa isa);

// True when the CPU has AVX512_BF16 (and the AVX-512 tier is supported).
bool HasAvx512Bf16();

// True when the AVX-512 tier may also use the AMX tile unit for int8 matrix
// products (the amx records of kernel_records.h): the CPU has AMX-TILE and AMX-INT8, the
// OS saves the tile state and granted this process its use, and the
// environment variable KVMESH_CPU_AMX is not "off" (read once). The kernels
// that use it give the same bits as the AVX-512 ones; this only picks speed.
bool HasAmx();

// "scalar", "avx2", "avx512".
std::string_view IsaName(Isa isa);
std::optional<Isa> ParseIsa(std::string_view name);

}  // namespace kvmesh::kernels
