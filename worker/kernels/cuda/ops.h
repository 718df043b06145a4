// The CUDA kernels of the model graph, callable from plain C++ (no CUDA types
// here: a stream is a cudaStream_t passed as void*, pointers are device
// pointers). Launches are asynchronous on `stream` and report nothing: the
// executor reads cudaGetLastError and the stream's status once per step.
//
// Every operation exists twice (see worker/kernels/cuda/README.md):
//   - a plain version, one thread per output value, written to be obviously
//     correct; it is the reference on the device, tested against the CPU;
//   - a fast version, tested against the plain one.
// The per-element arithmetic both use is block_math.h, which CPU tests check
// against the CPU kernels on every build.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"
#include "worker/kernels/cuda/block_math.h"

namespace kvmesh::cuda {

using Stream = void*;

// Weight types the matrix kernels take (F32, F16, BF16, Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K).
bool IsCudaWeightType(TensorType type);

// --- element-wise (elementwise.cu) -------------------------------------------

// out[r] ← row tokens[r] of `table` (a weight of `type`), as floats.
void EmbedRows(TensorType type, const uint8_t* table, size_t row_bytes, const int32_t* tokens,
               int64_t rows, int64_t n, float* out, Stream stream);
// out[r] ← x[r] / sqrt(mean(x[r]²) + eps) · w.
void RmsNormRows(const float* x, const float* w, float* out, int64_t rows, int64_t n, float eps,
                 Stream stream);
// Each head_dim slice of each row, in place, times the per-head weight w.
void HeadRmsNorm(float* x, const float* w, int64_t rows, int64_t heads, int head_dim, float eps,
                 Stream stream);
// x[r][i] += b[i].
void AddBias(float* x, const float* b, int64_t rows, int64_t width, Stream stream);
// x[i] += y[i].
void Add(float* x, const float* y, int64_t n, Stream stream);
// gate[i] ← SiLU(gate[i]) · up[i].
void SwiGlu(float* gate, const float* up, int64_t n, Stream stream);
// out[i] ← x[index[i]] (rows of `width` floats).
void GatherRows(const float* x, const int64_t* index, int64_t count, int64_t width, float* out,
                Stream stream);
// Rotary embedding of every head of every row, in place, with one row of
// n_rot/2 (cos, sin) pairs per token (RopeTable's table, uploaded).
void Rope(float* x, const float* cos_sin, int64_t rows, int64_t width, int head_dim, int n_rot,
          bool adjacent_pairs, Stream stream);
// out[r] ← argmax of row r (the first of equal maxima).
void ArgmaxRows(const float* x, int64_t rows, int64_t n, int32_t* out, Stream stream);

// --- KV pages and attention (attention.cu) ----------------------------------

// Where one layer's pages are and how a step's tokens map onto them. Pages
// are [num_blocks][block_size][n_head_kv] rows (KvLayout's order) of this
// device's KV heads.
struct PagedKv {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  TensorType k_type = TensorType::kF16;
  TensorType v_type = TensorType::kF16;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  int block_size = 16;
  int n_head_kv = 0;  // this device's
};

// The step's tokens: position, and where their sequence's block table starts
// in `tables` (device arrays of n_tokens entries).
struct StepTokens {
  int64_t n_tokens = 0;
  const int32_t* positions = nullptr;
  const int32_t* table_offset = nullptr;
  const int32_t* tables = nullptr;  // all sequences' block tables, concatenated
  int32_t max_context = 0;          // the largest positions[t] + 1
};

struct KvWrite {
  float* q = nullptr;  // [tokens][n_head * head_dim], rotated in place when k_rotated
  float* k = nullptr;  // [tokens][n_head_kv * head_dim], transformed in place
  float* v = nullptr;
  int n_head = 0;  // this device's query heads
  int head_dim = 0;
  const float* k_mean = nullptr;  // this layer's [n_head_kv][head_dim] of this device, or null
  bool k_rotated = false;
  bool v_rotated = false;
  bool min_error = true;  // q4_0 pages: KvRounding::kMinError
};

// K and V rows of every token into their pages (centering and rotation
// first, then the storage type's encoder: block_math.h, the CPU's bytes);
// queries rotated alongside K.
void WriteKv(const KvWrite& w, const PagedKv& kv, const StepTokens& t, Stream stream);

struct AttentionArgs {
  const float* q = nullptr;  // [tokens][n_head * head_dim]
  float* out = nullptr;      // [tokens][n_head * head_dim]
  int n_head = 0;
  int head_dim = 0;
  float scale = 1.0f;
  bool v_rotated = false;  // outputs are rotated back
};

// Causal attention of each token over positions 0..positions[t] of its
// sequence, reading the pages as stored.
void AttentionPlain(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, Stream stream);
// The same by split-K flash-decoding: each block serves every query head of
// one KV head over one chunk of positions, and a second kernel merges the
// chunks. `scratch` holds `scratch_floats` floats; the step's tokens are
// taken in pieces that fit it (AttentionScratchFloats(1, ...) per token).
// Falls back to the plain kernel where the shape is outside what it takes
// (head_dim a multiple of 32 up to 256, up to 8 query heads per KV head) or
// one token does not fit the scratch.
int64_t AttentionScratchFloats(int64_t n_tokens, int n_head, int head_dim, int max_context);
// The same for the tokens of one sequence's prefill chunk (every token of
// `t` in the same sequence): tiles of consecutive tokens share each K and V
// row read. False, launching nothing, where the shape is outside what it
// takes (head_dim 32, 64, 128 or 256; query heads per KV head up to
// 4096 / head_dim, at most 64).
bool AttentionTiled(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, Stream stream);
void AttentionSplitK(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, float* scratch,
                     int64_t scratch_floats, Stream stream);

// --- matrices (matmul.cu) ---------------------------------------------------

// A weight matrix as uploaded: n_out rows of n_in elements of `type`.
struct DeviceMatrix {
  TensorType type = TensorType::kF32;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
  int64_t n_out = 0;
  int64_t n_in = 0;
};

// y[r][o] (row stride ldy) ← Σ_i w[o][i] · x[r][i]: one thread per output.
void MatMulPlain(const DeviceMatrix& w, const float* x, int64_t rows, float* y, int64_t ldy,
                 Stream stream);

// Decode: rows of x quantized once to ActQ8 groups (n_in / 32 per row), then
// one warp per weight row reads it once for all `rows` (at most
// kMaxMatVecRows; kernels for 8, 16 and 32) with 4-byte integer dots.
// Quantized types only. The executor takes this path for steps of up to
// kDefaultMatVecRows rows, or KVMESH_CUDA_MATVEC_ROWS.
inline constexpr int kMaxMatVecRows = 32;
inline constexpr int kDefaultMatVecRows = 8;
void QuantizeActivations(const float* x, int64_t rows, int64_t n_in, ActQ8* out, Stream stream);
void MatVecQ8(const DeviceMatrix& w, const ActQ8* xq, int64_t rows, float* y, int64_t ldy,
              Stream stream);
// Decode for float weights (F32, F16, BF16), float activations.
void MatVecFloat(const DeviceMatrix& w, const float* x, int64_t rows, float* y, int64_t ldy,
                 Stream stream);

// Prefill support: rows [row_begin, row_begin + count) of a weight as f16 or
// bf16 (`bf16`) values, row-major, for a tensor-core GEMM; and activations
// converted likewise.
void DequantizeRows(const DeviceMatrix& w, int64_t row_begin, int64_t count, bool bf16,
                    uint16_t* out, Stream stream);
void ConvertActivations(const float* x, int64_t n, bool bf16, uint16_t* out, Stream stream);

}  // namespace kvmesh::cuda
