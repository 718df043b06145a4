// Checks kvmesh's reading and writing of quantized GGUF blocks against the
// ggml library of a native llama.cpp build, type by type:
//   - the bytes kvmesh's quantizer writes, decoded by ggml and by kvmesh,
//     must give the same floats bit for bit;
//   - the bytes ggml's quantizer writes, decoded by both, likewise;
//   - each quantizer's relative RMS error is printed (no importance matrix,
//     or a uniform one where ggml requires one).
// Built and run by bench/ggml_format_check.sh. Exit status 1 when any value
// differs.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ggml.h"
#include "worker/kernels/cpu/type_traits.h"

namespace {

struct Pair {
  ggml_type ggml;
  kvmesh::TensorType kvmesh;
};

const Pair kPairs[] = {
    {GGML_TYPE_Q4_0, kvmesh::TensorType::kQ4_0},
    {GGML_TYPE_Q4_1, kvmesh::TensorType::kQ4_1},
    {GGML_TYPE_Q5_0, kvmesh::TensorType::kQ5_0},
    {GGML_TYPE_Q5_1, kvmesh::TensorType::kQ5_1},
    {GGML_TYPE_Q8_0, kvmesh::TensorType::kQ8_0},
    {GGML_TYPE_Q2_K, kvmesh::TensorType::kQ2_K},
    {GGML_TYPE_Q3_K, kvmesh::TensorType::kQ3_K},
    {GGML_TYPE_Q4_K, kvmesh::TensorType::kQ4_K},
    {GGML_TYPE_Q5_K, kvmesh::TensorType::kQ5_K},
    {GGML_TYPE_Q6_K, kvmesh::TensorType::kQ6_K},
    {GGML_TYPE_IQ4_NL, kvmesh::TensorType::kIQ4_NL},
    {GGML_TYPE_IQ4_XS, kvmesh::TensorType::kIQ4_XS},
    {GGML_TYPE_IQ3_S, kvmesh::TensorType::kIQ3_S},
    {GGML_TYPE_IQ3_XXS, kvmesh::TensorType::kIQ3_XXS},
    {GGML_TYPE_IQ2_XS, kvmesh::TensorType::kIQ2_XS},
};

int Differing(const std::vector<float>& a, const std::vector<float>& b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], 4) != 0;
  return n;
}

double RelativeRms(const std::vector<float>& y, const std::vector<float>& x) {
  double error = 0, signal = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    error += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    signal += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(error / signal);
}

}  // namespace

int main() {
  constexpr int kN = 64 * 256;
  std::mt19937 rng(7);
  std::normal_distribution<float> bell(0.0f, 1.0f);
  std::vector<float> x(kN);
  // Rows of mixed spread, with a few outliers, as weights have.
  for (int i = 0; i < kN; ++i) x[i] = bell(rng) * (1.0f + static_cast<float>(i / 256 % 4));
  for (int i = 0; i < kN; i += 97) x[i] *= 6.0f;

  int failures = 0;
  std::printf("%-7s %28s %28s %10s %10s\n", "type", "kvmesh bytes: values differ",
              "ggml bytes: values differ", "rms kvmesh", "rms ggml");
  for (const Pair& p : kPairs) {
    const kvmesh::kernels::TypeTraits& traits = *kvmesh::kernels::GetReferenceTypeTraits(p.kvmesh);
    const size_t bytes = kvmesh::kernels::RowSizeBytes(traits, kN);
    if (bytes != ggml_row_size(p.ggml, kN)) {
      std::printf("%s: row sizes differ (%zu vs %zu)\n", ggml_type_name(p.ggml), bytes,
                  ggml_row_size(p.ggml, kN));
      ++failures;
      continue;
    }
    std::vector<uint8_t> ours(bytes), theirs(bytes);
    traits.from_float(x.data(), ours.data(), kN);
    // ggml refuses some I-quants without an importance matrix; uniform
    // importance stands for none.
    const std::vector<float> uniform(kN, 1.0f);
    ggml_quantize_chunk(p.ggml, x.data(), theirs.data(), 0, 1, kN,
                        ggml_quantize_requires_imatrix(p.ggml) ? uniform.data() : nullptr);
    const auto* ggml_traits = ggml_get_type_traits(p.ggml);
    std::vector<float> ours_by_us(kN), ours_by_ggml(kN), theirs_by_us(kN), theirs_by_ggml(kN);
    traits.to_float(ours.data(), ours_by_us.data(), kN);
    ggml_traits->to_float(ours.data(), ours_by_ggml.data(), kN);
    traits.to_float(theirs.data(), theirs_by_us.data(), kN);
    ggml_traits->to_float(theirs.data(), theirs_by_ggml.data(), kN);
    const int d1 = Differing(ours_by_us, ours_by_ggml);
    const int d2 = Differing(theirs_by_us, theirs_by_ggml);
    failures += d1 + d2;
    std::printf("%-7s %22d/%d %22d/%d %10.4f %10.4f\n", ggml_type_name(p.ggml), d1, kN, d2, kN,
                RelativeRms(ours_by_us, x), RelativeRms(theirs_by_ggml, x));
  }
  std::printf(failures == 0 ? "all decodings agree bit for bit\n" : "DIFFERENCES FOUND\n");
  return failures == 0 ? 0 : 1;
}
