#include "worker/kernels/cpu/iq_grids.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "common/check.h"

namespace kvmesh::kernels {

GridCodebook::GridCodebook(const uint16_t* levels, int points, int width, int bits,
                           std::vector<float> values)
    : width_(width), points_(points), bits_(bits), values_(std::move(values)) {
  const int num_levels = static_cast<int>(values_.size());
  KVMESH_CHECK(num_levels <= (1 << bits));
  const size_t keys = size_t{1} << (bits * width);
  const uint32_t mask = (1u << bits) - 1;
  auto level = [&](uint32_t code, int k) { return static_cast<int>((code >> (bits * k)) & mask); };
  point_values_.resize(static_cast<size_t>(points) * width);
  key_point_.assign(keys, -1);
  for (int p = 0; p < points; ++p) {
    for (int k = 0; k < width; ++k)
      point_values_[static_cast<size_t>(p) * width + k] = values_[level(levels[p], k)];
    key_point_[levels[p]] = p;
  }
  // For each key that is no point: the points whose squared distance in
  // level steps is at most one more than the least.
  near_begin_.assign(keys + 1, 0);
  std::vector<int> distance(static_cast<size_t>(points));
  for (size_t key = 0; key < keys; ++key) {
    near_begin_[key] = static_cast<uint32_t>(near_.size());
    bool valid = true;
    for (int k = 0; k < width; ++k)
      valid = valid && level(static_cast<uint32_t>(key), k) < num_levels;
    if (!valid || key_point_[key] >= 0) continue;
    int least = std::numeric_limits<int>::max();
    for (int p = 0; p < points; ++p) {
      int d = 0;
      for (int k = 0; k < width; ++k) {
        const int diff = level(static_cast<uint32_t>(key), k) - level(levels[p], k);
        d += diff * diff;
      }
      distance[static_cast<size_t>(p)] = d;
      least = std::min(least, d);
    }
    for (int p = 0; p < points; ++p) {
      if (distance[static_cast<size_t>(p)] <= least + 1) near_.push_back(static_cast<uint16_t>(p));
    }
  }
  near_begin_[keys] = static_cast<uint32_t>(near_.size());
}

int GridCodebook::Nearest(const float* a, const float* w, float step, float* error) const {
  const float inv = 1.0f / step;
  const int num_levels = static_cast<int>(values_.size());
  uint32_t key = 0;
  for (int k = 0; k < width_; ++k) {
    const float target = a[k] * inv;
    int best = 0;
    while (best + 1 < num_levels && values_[best + 1] + values_[best] < 2.0f * target) ++best;
    key |= static_cast<uint32_t>(best) << (bits_ * k);
  }
  auto cost = [&](int p) {
    float e = 0.0f;
    const float* v = &point_values_[static_cast<size_t>(p) * width_];
    for (int k = 0; k < width_; ++k) {
      const float diff = a[k] - step * v[k];
      e += w[k] * diff * diff;
    }
    return e;
  };
  const int exact = key_point_[key];
  if (exact >= 0) {
    *error = cost(exact);
    return exact;
  }
  int best_point = -1;
  float best_error = std::numeric_limits<float>::max();
  for (uint32_t i = near_begin_[key]; i < near_begin_[key + 1]; ++i) {
    const float e = cost(near_[i]);
    if (e < best_error) {
      best_error = e;
      best_point = near_[i];
    }
  }
  KVMESH_CHECK(best_point >= 0);
  *error = best_error;
  return best_point;
}

const GridCodebook& Iq3sCodebook() {
  static const GridCodebook book(kIq3sGridLevels, 512, 4, 3, {1, 3, 5, 7, 9, 11, 13, 15});
  return book;
}

const GridCodebook& Iq3xxsCodebook() {
  static const GridCodebook book(kIq3xxsGridLevels, 256, 4, 3, {4, 12, 20, 28, 36, 44, 52, 62});
  return book;
}

const GridCodebook& Iq2xsCodebook() {
  static const GridCodebook book(kIq2xsGridLevels, 512, 8, 2, {8, 25, 43});
  return book;
}

}  // namespace kvmesh::kernels

namespace kvmesh::kernels {

uint8_t GridSignBits(const float* x, const float* w, const float* m, int count, bool even_signs) {
  uint8_t bits = 0;
  for (int k = 0; k < count; ++k) {
    if (x[k] < 0.0f) bits |= static_cast<uint8_t>(1 << k);
  }
  if (even_signs && (__builtin_popcount(bits) & 1)) {
    int cheapest = 0;
    float least = std::numeric_limits<float>::max();
    for (int k = 0; k < count; ++k) {
      const float c = w[k] * std::fabs(x[k]) * m[k];
      if (c < least) {
        least = c;
        cheapest = k;
      }
    }
    bits ^= static_cast<uint8_t>(1 << cheapest);
  }
  return bits;
}

float GridRunError(const GridCodebook& book, const float* x, const float* w, int n, float step,
                   bool even_signs, uint16_t* points) {
  const int width = book.width();
  float a[8];
  float error = 0.0f;
  for (int g = 0; g < n / width; ++g) {
    for (int k = 0; k < width; ++k) a[k] = std::fabs(x[width * g + k]);
    float e = 0.0f;
    points[g] = static_cast<uint16_t>(book.Nearest(a, w + width * g, step, &e));
    error += e;
  }
  if (even_signs) {
    // An odd count of negatives costs the cheapest flip: (|x| + m)^2 - (|x| - m)^2.
    for (int s = 0; s < n; s += 8) {
      int negatives = 0;
      float least = std::numeric_limits<float>::max();
      for (int k = s; k < s + 8; ++k) {
        negatives += x[k] < 0.0f;
        const float m = step * book.Value(points[k / width], k % width);
        least = std::min(least, 4.0f * w[k] * std::fabs(x[k]) * m);
      }
      if (negatives & 1) error += least;
    }
  }
  return error;
}

float FitGridStep(const GridCodebook& book, const float* x, const float* w, int n,
                  bool even_signs) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (amax == 0.0f) return 0.0f;
  float top = 0.0f;
  for (int p = 0; p < book.points(); ++p) {
    for (int k = 0; k < book.width(); ++k) top = std::max(top, book.Value(p, k));
  }
  uint16_t points[256];
  KVMESH_CHECK(n <= 256);
  float best_step = amax / top;
  float best_error = std::numeric_limits<float>::max();
  for (int i = 0; i <= 14; ++i) {
    const float step = amax / top * (0.7f + 0.05f * static_cast<float>(i));
    const float e = GridRunError(book, x, w, n, step, even_signs, points);
    if (e < best_error) {
      best_error = e;
      best_step = step;
    }
  }
  // Least squares for the points of the best step: step = sum w a v / sum w v^2.
  for (int round = 0; round < 2; ++round) {
    GridRunError(book, x, w, n, best_step, even_signs, points);
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; ++i) {
      const double v = book.Value(points[i / book.width()], i % book.width());
      num += w[i] * std::fabs(x[i]) * v;
      den += w[i] * v * v;
    }
    if (den <= 0.0 || num <= 0.0) break;
    const float step = static_cast<float>(num / den);
    const float e = GridRunError(book, x, w, n, step, even_signs, points);
    if (!(e < best_error)) break;
    best_error = e;
    best_step = step;
  }
  return best_step;
}

}  // namespace kvmesh::kernels
