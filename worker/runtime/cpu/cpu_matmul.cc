#include "worker/runtime/cpu/cpu_matmul.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "common/check.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {
namespace {

// Token chunks are sized so one chunk's activations stay in a core's L2 while
// every panel of the thread's share streams past them.
constexpr size_t kActivationBudget = size_t{1} << 20;
constexpr int kMaxTargets = 4;

// The work of one MatMulQuantized call is a line of "slots": token chunk
// major, then the targets' panels one after the other. Threads take runs of
// consecutive slots from a shared counter, each run a fraction of what is
// left (guided self-scheduling): long runs at first - one unbroken stream of
// weights per thread, which decode is all about - and short ones at the end,
// so the threads finish together even when one of them was slowed down.
struct Schedule {
  int64_t token_chunk = 0;
  int64_t num_chunks = 0;
  int num_targets = 0;
  int64_t panels_before[kMaxTargets + 1] = {};  // prefix sums over targets
  int64_t min_run = 1;
  int threads = 1;

  int64_t slots_per_chunk() const { return panels_before[num_targets]; }
  int64_t total_slots() const { return slots_per_chunk() * num_chunks; }

  // Claims the next run; false when the work is gone.
  bool Claim(std::atomic<int64_t>& next, int64_t* begin, int64_t* end) const {
    int64_t start = next.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t left = total_slots() - start;
      if (left <= 0) return false;
      const int64_t run = std::min(left, std::max(min_run, left / (2 * threads)));
      if (next.compare_exchange_weak(start, start + run, std::memory_order_relaxed)) {
        *begin = start;
        *end = start + run;
        return true;
      }
    }
  }
};

Schedule MakeSchedule(std::span<const MatMulTarget> targets, const QuantizedRows& x, int threads) {
  Schedule s;
  s.threads = threads;
  s.num_targets = static_cast<int>(targets.size());
  const int64_t fit = static_cast<int64_t>(kActivationBudget / x.layout.row_bytes);
  s.token_chunk = std::max<int64_t>(8, fit / 8 * 8);
  if (s.token_chunk >= x.rows) s.token_chunk = x.rows;
  s.num_chunks = (x.rows + s.token_chunk - 1) / s.token_chunk;
  for (int i = 0; i < s.num_targets; ++i) {
    s.panels_before[i + 1] = s.panels_before[i] + targets[i].w->num_panels();
  }
  // A run of at least ~64 KiB of weights (or a single panel) keeps the
  // memory stream going between claims.
  const size_t panel_bytes = targets[0].w->panel_bytes();
  s.min_run = std::max<int64_t>(1, static_cast<int64_t>((size_t{64} << 10) / panel_bytes));
  return s;
}

// Below this much work a product runs on the calling thread alone: waking
// the pool costs microseconds, and on a loaded machine a worker may not run
// at once.
constexpr double kMinParallelMicros = 20.0;

// A rough single-core cost: weights stream at ~10 GB/s, multiply-adds run at
// ~100 G/s.
double EstimatedMicros(std::span<const MatMulTarget> targets, int64_t tokens) {
  double bytes = 0, macs = 0;
  for (const MatMulTarget& t : targets) {
    bytes += static_cast<double>(t.w->panel_bytes()) * t.w->num_panels();
    macs += static_cast<double>(t.w->rows()) * t.w->cols() * tokens;
  }
  return bytes / 10e3 + macs / 100e3;
}

// Runs the kernel over panels [p0, p1) of `w` and tokens [t0, t1). A partial
// last panel goes through `spill`, since the kernels write whole panels.
void RunUnit(const PackedMatrix& w, float* y, const QuantizedRows& x, int64_t p0, int64_t p1,
             int64_t t0, int64_t t1, std::vector<float>* spill) {
  kernels::PanelGemmArgs a;
  a.cols = w.cols();
  a.x = x.Row(t0);
  a.x_stride = x.layout.row_bytes;
  a.num_tokens = t1 - t0;
  a.y_stride = w.rows();
  const bool partial_last = p1 == w.num_panels() && w.rows() % kernels::kPanelRows != 0;
  const int64_t full_end = partial_last ? p1 - 1 : p1;
  if (p0 < full_end) {
    a.panels = w.Panel(p0);
    a.num_panels = full_end - p0;
    a.y = y + t0 * w.rows() + p0 * kernels::kPanelRows;
    w.gemm()(a);
  }
  if (partial_last) {
    const int64_t tokens = t1 - t0;
    spill->resize(static_cast<size_t>(tokens * kernels::kPanelRows));
    a.panels = w.Panel(p1 - 1);
    a.num_panels = 1;
    a.y = spill->data();
    a.y_stride = kernels::kPanelRows;
    w.gemm()(a);
    const int64_t first_row = (p1 - 1) * kernels::kPanelRows;
    const int64_t valid = w.rows() - first_row;
    for (int64_t t = 0; t < tokens; ++t) {
      std::copy_n(spill->data() + t * kernels::kPanelRows, valid,
                  y + (t0 + t) * w.rows() + first_row);
    }
  }
}

}  // namespace

size_t PackedMatrix::PackedBytes(const WeightMatrix& w) {
  return kernels::PanelBytes(w.type, w.cols) * static_cast<size_t>(kernels::NumPanels(w.rows));
}

PackedMatrix PackedMatrix::Pack(const WeightMatrix& w, kernels::Isa isa, ThreadPool& pool) {
  AlignedBuffer panels(PackedBytes(w));
  PackedMatrix m = PackInto(w, isa, pool, panels.data());
  m.panels_ = std::move(panels);  // the bytes stay where they are
  return m;
}

PackedMatrix PackedMatrix::PackInto(const WeightMatrix& w, kernels::Isa isa, ThreadPool& pool,
                                    uint8_t* dst) {
  KVMESH_CHECK(kernels::HasPanelLayout(w.type) && w.traits != nullptr);
  PackedMatrix m;
  m.type_ = w.type;
  m.vec_dot_type_ = w.traits->vec_dot_type;
  m.rows_ = w.rows;
  m.cols_ = w.cols;
  m.panel_bytes_ = kernels::PanelBytes(w.type, w.cols);
  m.gemm_ = kernels::GetPanelGemm(w.type, isa);
  KVMESH_CHECK(m.gemm_ != nullptr);
  m.data_ = dst;
  const size_t panel_bytes = m.panel_bytes_;
  pool.ParallelFor(
      m.num_panels(),
      [&](int64_t begin, int64_t end) {
        kernels::PackPanels(w.type, w.data, w.row_bytes, w.rows, w.cols, begin, end,
                            dst + begin * panel_bytes);
      },
      /*min_chunk=*/8);
  return m;
}

void QuantizeRows(const float* x, int64_t rows, int64_t cols, TensorType type, ThreadPool& pool,
                  QuantizedRows* out) {
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(type);
  KVMESH_CHECK(traits != nullptr && traits->from_float != nullptr);
  out->type = type;
  out->cols = cols;
  out->rows = rows;
  out->layout = kernels::GetPlanarLayout(type, cols);
  out->planar.Resize(out->layout.row_bytes * static_cast<size_t>(rows));
  const size_t block_bytes = kernels::RowSizeBytes(*traits, cols);
  auto convert = [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint8_t> blocks;
    blocks.resize(block_bytes);
    for (int64_t r = begin; r < end; ++r) {
      traits->from_float(x + r * cols, blocks.data(), cols);
      kernels::BlocksToPlanar(out->layout, blocks.data(),
                              out->planar.data() + r * out->layout.row_bytes);
    }
  };
  if (rows <= 2) {
    convert(0, rows);  // not worth waking the pool
  } else {
    pool.ParallelFor(rows, convert);
  }
}

void MatMulQuantized(std::span<const MatMulTarget> targets, const QuantizedRows& x,
                     ThreadPool& pool) {
  KVMESH_CHECK(!targets.empty() && targets.size() <= kMaxTargets);
  for (const MatMulTarget& t : targets) {
    KVMESH_CHECK(x.type == t.w->vec_dot_type() && x.cols == t.w->cols());
  }
  if (x.rows == 0) return;
  const Schedule s = MakeSchedule(targets, x, pool.num_threads());
  std::atomic<int64_t> next_slot{0};
  auto work = [&](int64_t, int64_t) {
    thread_local std::vector<float> spill;
    int64_t begin, end;
    while (s.Claim(next_slot, &begin, &end)) {
      // A run may cross from one target (or token chunk) into the next.
      while (begin < end) {
        const int64_t chunk = begin / s.slots_per_chunk();
        const int64_t slot = begin % s.slots_per_chunk();
        int i = 0;
        while (slot >= s.panels_before[i + 1]) ++i;
        const PackedMatrix& w = *targets[i].w;
        const int64_t p0 = slot - s.panels_before[i];
        const int64_t p1 = std::min(w.num_panels(), p0 + (end - begin));
        const int64_t t0 = chunk * s.token_chunk;
        const int64_t t1 = std::min(x.rows, t0 + s.token_chunk);
        RunUnit(w, targets[i].y, x, p0, p1, t0, t1, &spill);
        begin += p1 - p0;
      }
    }
  };
  // One call per thread; each claims runs until none are left. A product
  // smaller than a thread hand-off is worth stays on this thread.
  if (EstimatedMicros(targets, x.rows) < kMinParallelMicros) {
    work(0, 1);
  } else {
    pool.ParallelFor(pool.num_threads(), work);
  }
}

void MatMulShared(const float* x, int64_t rows, std::span<const MatMulTarget> targets,
                  ThreadPool& pool, QuantizedRows* scratch) {
  KVMESH_CHECK(targets.size() <= kMaxTargets);
  bool done[kMaxTargets] = {};
  for (size_t i = 0; i < targets.size(); ++i) {
    if (done[i]) continue;
    const TensorType type = targets[i].w->vec_dot_type();
    MatMulTarget group[kMaxTargets];
    size_t n = 0;
    for (size_t j = i; j < targets.size(); ++j) {
      if (!done[j] && targets[j].w->vec_dot_type() == type) {
        group[n++] = targets[j];
        done[j] = true;
      }
    }
    QuantizeRows(x, rows, targets[i].w->cols(), type, pool, scratch);
    MatMulQuantized(std::span<const MatMulTarget>(group, n), *scratch, pool);
  }
}

void MatMul(const PackedMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool,
            QuantizedRows* scratch) {
  QuantizeRows(x, rows, w.cols(), w.vec_dot_type(), pool, scratch);
  MatMulQuantized(w, *scratch, y, pool);
}

}  // namespace kvmesh
