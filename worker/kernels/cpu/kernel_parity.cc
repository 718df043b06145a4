#include "worker/kernels/cpu/kernel_parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/check.h"
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"

namespace kvmesh::kernels {
namespace {

// Bytes for a quantized row, in 8-byte units so every block type is aligned.
std::vector<uint64_t> RowStorage(const TypeTraits& traits, int64_t n) {
  return std::vector<uint64_t>(RowSizeBytes(traits, n) / sizeof(uint64_t) + 1);
}

// Extra error allowed when the activations are Q8_1: the kernel applies the
// weight block's offset m to the cached s instead of to d * sum(q). The
// offset is itself one of the block's dequantized weights (the block minimum
// maps to level 0), so |m| <= max |w| over the block.
double Q8_1OffsetAllowance(const std::vector<float>& weights, const void* activations, int64_t n) {
  const BlockQ8_1* blocks = static_cast<const BlockQ8_1*>(activations);
  double allowance = 0.0;
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b) {
    int32_t level_sum = 0;
    float max_weight = 0.0f;
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      level_sum += blocks[b].qs[j];
      max_weight = std::max(max_weight, std::fabs(weights[b * kLegacyBlockSize + j]));
    }
    const double exact = static_cast<double>(HalfToFloat(blocks[b].d)) * level_sum;
    allowance += max_weight * std::fabs(HalfToFloat(blocks[b].s) - exact);
  }
  return allowance;
}

}  // namespace

uint64_t TestRandom::NextBits() {
  state_ += 0x9e3779b97f4a7c15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float TestRandom::Uniform() { return static_cast<float>(NextBits() >> 40) * 0x1p-24f; }

float TestRandom::Bell() {
  const float sum = Uniform() + Uniform() + Uniform() + Uniform();
  return (sum - 2.0f) * 1.7320508f;  // the sum has variance 1/3
}

std::vector<float> MakeTestRow(TestRandom& rng, int64_t n) {
  static constexpr float kBlockScales[] = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
  std::vector<float> row(static_cast<size_t>(n));
  float scale = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 32 == 0) scale = kBlockScales[rng.NextBits() % 5];
    float value = rng.Bell() * scale;
    if (rng.NextBits() % 64 == 0) value *= 8.0f;
    row[static_cast<size_t>(i)] = value;
  }
  return row;
}

ParityReport CheckVecDotParity(const TypeTraits& traits, VecDotFn candidate,
                               const ParityOptions& options) {
  const TypeTraits* x_traits = GetReferenceTypeTraits(traits.vec_dot_type);
  KVMESH_CHECK(x_traits != nullptr && candidate != nullptr);
  const int64_t block = std::max(traits.block_size, x_traits->block_size);
  const int64_t long_length = (options.long_length + block - 1) / block * block;
  const int64_t lengths[] = {block, 3 * block, long_length, long_length + block};

  TestRandom rng(options.seed);
  ParityReport report;
  for (const int64_t n : lengths) {
    for (int r = 0; r < options.rows_per_length + 2; ++r) {
      std::vector<float> w_source = MakeTestRow(rng, n);
      std::vector<float> x_source = MakeTestRow(rng, n);
      if (r == 0) std::fill(w_source.begin(), w_source.end(), 0.0f);
      if (r == 1) std::fill(x_source.begin(), x_source.end(), 0.0f);

      std::vector<uint64_t> w = RowStorage(traits, n);
      std::vector<uint64_t> x = RowStorage(*x_traits, n);
      traits.from_float(w_source.data(), w.data(), n);
      x_traits->from_float(x_source.data(), x.data(), n);
      std::vector<float> w_values(static_cast<size_t>(n));
      std::vector<float> x_values(static_cast<size_t>(n));
      traits.to_float(w.data(), w_values.data(), n);
      x_traits->to_float(x.data(), x_values.data(), n);

      double reference = 0.0;
      double magnitude = 0.0;
      for (size_t i = 0; i < w_values.size(); ++i) {
        const double term = static_cast<double>(w_values[i]) * x_values[i];
        reference += term;
        magnitude += std::fabs(term);
      }
      double allowed = options.relative_tolerance * magnitude;
      if (traits.vec_dot_type == TensorType::kQ8_1) {
        allowed += Q8_1OffsetAllowance(w_values, x.data(), n);
      }

      const double got = candidate(n, w.data(), x.data());
      const double error = std::fabs(got - reference);
      ++report.rows_checked;
      if (allowed > 0.0) report.worst_ratio = std::max(report.worst_ratio, error / allowed);
      if (!(error <= allowed) && report.ok) {
        report.ok = false;
        char message[256];
        std::snprintf(message, sizeof message,
                      "%s row %d of length %lld: got %.9g, reference %.9g, |error| %.3g > "
                      "allowed %.3g",
                      TensorTypeName(traits.type).c_str(), r, static_cast<long long>(n), got,
                      reference, error, allowed);
        report.failure = message;
      }
    }
  }
  return report;
}

}  // namespace kvmesh::kernels
