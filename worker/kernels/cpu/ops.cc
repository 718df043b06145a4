#include "worker/kernels/cpu/ops.h"

#include <cmath>
#include <limits>

#include "common/check.h"
#include "common/half.h"

namespace kvmesh::kernels {
namespace {

float SiluOne(float x) { return x / (1.0f + std::exp(-x)); }

// Calls rotate(i, cos_i, sin_i) for pair i = 0 .. n_rot/2 - 1. The angle is
// formed as ggml does: theta starts at pos and is multiplied by
// base^(-2/n_rot) once per pair in float, and freq_scale is applied last, so
// rounding matches llama.cpp rather than a freshly computed power.
template <typename Rotate>
void ForEachRopePair(int head_dim, int n_rot, int64_t pos, float freq_base, float freq_scale,
                     Rotate rotate) {
  KVMESH_CHECK(n_rot >= 0 && n_rot % 2 == 0 && n_rot <= head_dim);
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float angle = freq_scale * theta;
    rotate(i, std::cos(angle), std::sin(angle));
    theta *= theta_scale;
  }
}

}  // namespace

void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
}

void Softmax(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv_sum;
}

void Silu(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluOne(x[i]);
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluOne(gate[i]) * up[i];
}

void Scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

void RoundToHalf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = HalfToFloat(FloatToHalf(x[i]));
}

double ExpShifted(float* x, int64_t n, float shift) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - shift;
    x[i] = d < kExpShiftedFloor ? 0.0f : std::exp(d);
    sum += x[i];
  }
  return sum;
}

namespace avx2 {
void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);
void SwiGlu(const float* gate, const float* up, float* out, int64_t n);
void RoundToHalf(float* x, int64_t n);
double ExpShifted(float* x, int64_t n, float shift);
void Scale(float* x, int64_t n, float factor);
}  // namespace avx2
namespace avx512 {
void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);
void SwiGlu(const float* gate, const float* up, float* out, int64_t n);
void RoundToHalf(float* x, int64_t n);
double ExpShifted(float* x, int64_t n, float shift);
void Scale(float* x, int64_t n, float factor);
}  // namespace avx512

const RowOps& GetRowOps(Isa isa) {
  static constexpr RowOps kScalar = {RmsNorm, SwiGlu, RoundToHalf, ExpShifted, Scale};
#ifdef KVMESH_X86_SIMD
  static constexpr RowOps kAvx2 = {avx2::RmsNorm, avx2::SwiGlu, avx2::RoundToHalf, avx2::ExpShifted,
                                   avx2::Scale};
  static constexpr RowOps kAvx512 = {avx512::RmsNorm, avx512::SwiGlu, avx512::RoundToHalf,
                                     avx512::ExpShifted, avx512::Scale};
#else
  static constexpr RowOps kAvx2 = kScalar;  // never chosen: HostIsa() is kScalar
  static constexpr RowOps kAvx512 = kScalar;
#endif
  switch (isa) {
    case Isa::kAvx2:
      return kAvx2;
    case Isa::kAvx512:
      return kAvx512;
    case Isa::kScalar:
      break;
  }
  return kScalar;
}

void RopeNorm(float* head, int head_dim, int n_rot, int64_t pos, float freq_base,
              float freq_scale) {
  ForEachRopePair(head_dim, n_rot, pos, freq_base, freq_scale, [&](int i, float c, float s) {
    const float x0 = head[2 * i];
    const float x1 = head[2 * i + 1];
    head[2 * i] = x0 * c - x1 * s;
    head[2 * i + 1] = x0 * s + x1 * c;
  });
}

void RopeNeox(float* head, int head_dim, int n_rot, int64_t pos, float freq_base,
              float freq_scale) {
  const int half = n_rot / 2;
  ForEachRopePair(head_dim, n_rot, pos, freq_base, freq_scale, [&](int i, float c, float s) {
    const float x0 = head[i];
    const float x1 = head[i + half];
    head[i] = x0 * c - x1 * s;
    head[i + half] = x0 * s + x1 * c;
  });
}

}  // namespace kvmesh::kernels
