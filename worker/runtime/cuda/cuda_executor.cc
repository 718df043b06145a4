#include "worker/runtime/cuda/cuda_executor.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "worker/runtime/cuda/cuda_executor_impl.h"
#include "worker/runtime/cuda/cuda_memory.h"
#include "worker/runtime/layer_fields.h"

namespace kvmesh {
namespace {

// A sequence with at least this many tokens in a step takes the tiled
// attention kernel (its tokens share each K and V row read); fewer, and
// split-K's spread over the context serves it better.
constexpr int32_t kTiledAttentionMinTokens = 16;

}  // namespace

const float* CudaExecutor::Impl::VectorOf(int layer, Vector v) const {
  if (v == Vector::kOutputNorm) return output_norm;
  return LayerVector(vectors[layer - shard.layer_begin], v);
}

const cuda::DeviceMatrix& CudaExecutor::Impl::MatrixOf(int layer, Matrix m) const {
  if (m == Matrix::kOutput) return output;
  return LayerMatrix(layers[layer - shard.layer_begin], m);
}

cuda::PagedKv CudaExecutor::Impl::PagesOf(int local_layer) const {
  cuda::PagedKv kv;
  kv.k = k_pages.get() + k_layer_bytes * local_layer;
  kv.v = v_pages.get() + v_layer_bytes * local_layer;
  kv.k_type = layout.k_type;
  kv.v_type = layout.v_type;
  kv.k_row_bytes = layout.k_row_bytes();
  kv.v_row_bytes = layout.v_row_bytes();
  kv.block_size = layout.block_size;
  kv.n_head_kv = shard.num_kv_heads();
  return kv;
}

// y (column-major n_out x rows, ld ldy, i.e. row-major rows x n_out) ←
// W·x on tensor cores: cuBLAS reads the row-major weight as its transpose.
// `x16_format` says what x16 holds (-1 nothing, 0 f16, 1 bf16), so targets
// that share an input convert it once.
void CudaExecutor::Impl::Gemm(const cuda::DeviceMatrix& m, const float* x, int64_t rows, float* y,
                              int64_t ldy, int* x16_format) {
  const float one = 1.0f, zero = 0.0f;
  const int n_out = static_cast<int>(m.n_out), n_in = static_cast<int>(m.n_in);
  if (m.type == TensorType::kF32) {
    Fail(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, n_out, static_cast<int>(rows), n_in, &one,
                     reinterpret_cast<const float*>(m.data), static_cast<int>(m.row_bytes / 4), x,
                     n_in, &zero, y, static_cast<int>(ldy)),
         "cublasSgemm");
    return;
  }
  const bool bf16 = m.type != TensorType::kF16;  // BF16 weights and quantized ones
  const int format = bf16 ? 1 : 0;
  if (*x16_format != format) {
    Fail(x16.Reserve(static_cast<size_t>(rows * n_in) * 2));
    cuda::ConvertActivations(x, rows * n_in, bf16, x16.get<uint16_t>(), stream);
    *x16_format = format;
  }
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  if (!IsQuantized(m.type)) {
    Fail(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, n_out, static_cast<int>(rows), n_in, &one,
                      m.data, t, static_cast<int>(m.row_bytes / 2), x16.get(), t, n_in, &zero, y,
                      CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         "cublasGemmEx");
    return;
  }
  // Quantized: rows of W dequantized to bf16 (f16 cannot hold every
  // activation: the down projection's input can pass 65504) a bounded chunk
  // at a time, in multiples of 64 rows so each chunk's output stays aligned.
  int64_t chunk = static_cast<int64_t>(dequant.size() / 2) / n_in;
  chunk = std::max<int64_t>(64, chunk / 64 * 64);
  for (int64_t r0 = 0; r0 < m.n_out; r0 += chunk) {
    const int64_t count = std::min(chunk, m.n_out - r0);
    cuda::DequantizeRows(m, r0, count, true, dequant.get<uint16_t>(), stream);
    Fail(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(count),
                      static_cast<int>(rows), n_in, &one, dequant.get(), CUDA_R_16BF, n_in,
                      x16.get(), CUDA_R_16BF, n_in, &zero, y + r0, CUDA_R_32F,
                      static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
         "cublasGemmEx");
  }
}

StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(const Model& model,
                                                             const KvLayout& layout,
                                                             const DeviceShard& shard,
                                                             int64_t num_blocks, Communicator* comm,
                                                             const CudaExecutorOptions& options) {
  if (shard.device.kind != DeviceKind::kCuda) {
    return InvalidArgumentError("device " + shard.device.Name() + " is not a CUDA device");
  }
  if (model.config().is_moe()) {
    return UnimplementedError("device " + shard.device.Name() + ": " + model.config().arch_name +
                              " is a mixture of experts (" +
                              std::to_string(model.config().n_expert) +
                              " experts), which the CUDA executor does not run yet; "
                              "serve it on CPU devices");
  }
  const ModelConfig& c = model.config();
  if (c.ffn_activation != FfnActivation::kSilu || c.embed_scale > 0.0f || c.query_scale > 0.0f ||
      c.attn_softcap > 0.0f || c.final_softcap > 0.0f || c.has_post_norms || c.sliding_window > 0 ||
      c.window_rope) {
    return UnimplementedError("device " + shard.device.Name() + ": " + c.arch_name +
                              " needs GeGLU, soft-capping, post-norms and sliding-window "
                              "attention, which the CUDA executor does not run yet; "
                              "serve it on CPU devices");
  }
  auto impl = std::make_unique<Impl>(model, layout, shard, num_blocks, comm, options);
  RETURN_IF_ERROR(impl->Init(model));
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(impl)));
}

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::BeginStep(const StepView& s) {
  Impl& m = *impl_;
  m.graph_mode = Impl::GraphMode::kNone;
  m.Fail(cudaSetDevice(m.shard.device.index), "cudaSetDevice");
  m.step = s;
  m.n_tokens = static_cast<int64_t>(s.positions.size());
  const int64_t n = m.n_tokens;
  const int64_t n_logits = static_cast<int64_t>(s.logit_rows.size());
  m.rope.Compute(s.positions);
  const std::span<const float> rope = m.rope.table();

  // One host block, one copy: tokens, positions, table offsets, tables,
  // logit row indices, the RoPE table.
  const std::vector<SequenceChunk>& seqs = s.batch->sequences;
  std::vector<int32_t> seq_offset(seqs.size());
  int64_t table_entries = 0;
  m.max_context = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    seq_offset[i] = static_cast<int32_t>(table_entries);
    const int64_t end = static_cast<int64_t>(seqs[i].start_pos) + seqs[i].num_tokens;
    table_entries += (end + m.layout.block_size - 1) / m.layout.block_size;
    m.max_context = std::max<int32_t>(m.max_context, static_cast<int32_t>(end));
  }
  // A step a graph can replay (CudaExecutorOptions::graphs): one token of
  // each of at most matvec_rows sequences, on a device that computes the
  // whole model alone. Its block tables get a slot count that only grows,
  // so that the step's device layout (and every pointer a graph holds)
  // stays put while the contexts grow.
  bool graph_step = m.options.graphs && !m.options.plain && !m.graphs_off && n > 0 &&
                    n <= m.options.matvec_rows && m.shard.layer_begin == 0 &&
                    m.shard.layer_end == m.config.n_layer &&
                    m.shard.num_q_heads() == m.config.n_head && m.shard.vocab_begin == 0 &&
                    m.shard.vocab_end == m.config.n_vocab &&
                    (m.comm == nullptr || m.comm->size() == 1);
  for (const SequenceChunk& seq : seqs) graph_step = graph_step && seq.num_tokens == 1;
  int64_t table_slots = table_entries;
  if (graph_step) {
    if (table_entries > m.graph_table_cap) {
      m.graph_table_cap = std::max<int64_t>({table_entries, 2 * m.graph_table_cap, 64});
    }
    table_slots = m.graph_table_cap;
  }
  const size_t ints = AlignUp((3 * n + table_slots) * 4);
  const size_t index_bytes = AlignUp(n_logits * 8);
  const size_t rope_bytes = rope.size() * 4;
  const size_t total = ints + index_bytes + rope_bytes;
  m.Fail(m.step_host.Reserve(total));
  m.Fail(m.step_device.Reserve(total));
  if (m.Skip()) return;
  int32_t* h = m.step_host.get<int32_t>();
  for (int64_t t = 0; t < n; ++t) {
    h[t] = s.batch->tokens[t];
    h[n + t] = s.positions[t];
    h[2 * n + t] = seq_offset[s.token_seq[t]];
  }
  int32_t* tables = h + 3 * n;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int64_t end = static_cast<int64_t>(seqs[i].start_pos) + seqs[i].num_tokens;
    const int64_t used = (end + m.layout.block_size - 1) / m.layout.block_size;
    std::memcpy(tables + seq_offset[i], seqs[i].block_table.data(), used * 4);
  }
  std::memcpy(m.step_host.get() + ints, s.logit_rows.data(), n_logits * 8);
  std::memcpy(m.step_host.get() + ints + index_bytes, rope.data(), rope_bytes);
  m.Fail(cudaMemcpyAsync(m.step_device.get(), m.step_host.get(), total, cudaMemcpyHostToDevice,
                         m.stream),
         "step upload");
  const int32_t* d = m.step_device.get<int32_t>();
  m.d_tokens = d;
  m.d_positions = d + n;
  m.d_table_offset = d + 2 * n;
  m.d_tables = d + 3 * n;
  m.d_logit_index = reinterpret_cast<const int64_t*>(m.step_device.get() + ints);
  m.d_rope = reinterpret_cast<const float*>(m.step_device.get() + ints + index_bytes);

  for (int a = 0; a < kNumActs; ++a) {
    m.Fail(m.acts[a].Reserve(
        std::max<size_t>(4, static_cast<size_t>(m.Rows(static_cast<Act>(a)) * m.width[a]) * 4)));
  }
  const int64_t max_in =
      std::max({m.width[static_cast<int>(Act::kNormed)], m.width[static_cast<int>(Act::kGate)],
                m.width[static_cast<int>(Act::kAttention)]});
  if (n > m.options.matvec_rows) m.Fail(m.x16.Reserve(static_cast<size_t>(n * max_in) * 2));
  const int64_t vec_rows = std::min<int64_t>(n, m.options.matvec_rows);
  m.Fail(m.xq.Reserve(std::max<size_t>(
      1, static_cast<size_t>(vec_rows * (max_in / cuda::kGroup + 1)) * sizeof(cuda::ActQ8))));

  m.graph_mode = Impl::GraphMode::kNone;
  if (!graph_step || m.Skip()) return;
  // Split-K's grid is sized for the context rounded up (its blocks past a
  // token's context write empty chunks), so one graph serves kGraphContext
  // positions of growth.
  const int32_t cap =
      (m.max_context + Impl::kGraphContext - 1) / Impl::kGraphContext * Impl::kGraphContext;
  m.max_context = cap;
  const Impl::GraphKey key{n, n_logits, cap};
  const uint64_t signature = m.GraphSignature();
  if (signature != m.graph_signature) {
    m.DropGraphs();
    m.graph_signature = signature;
  }
  if (m.graphs.count(key) != 0) {
    m.graph_mode = Impl::GraphMode::kReplay;
    m.logits_pending = n_logits > 0;  // as MatMul(kOutput) would have set it
  } else if (key == m.last_graph_key) {
    // The second step of this shape: its buffers have their sizes, so the
    // ops launch nothing but kernels and copies; capture them (relaxed: the
    // capture ends in TakeError, which may run on another thread).
    // A capture that cannot begin leaves the step to run as launched, and
    // the following steps without graphs.
    if (cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
      m.graph_mode = Impl::GraphMode::kCapture;
    } else {
      cudaGetLastError();
      m.graphs_off = true;
      m.DropGraphs();
    }
  }
  m.graph_key = key;
  m.last_graph_key = key;
}

void CudaExecutor::Embed() {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::EmbedRows(m.embedding.type, m.embedding.data, m.embedding.row_bytes, m.d_tokens, m.n_tokens,
                  m.config.n_embd, m.A(Act::kResidual), m.stream);
  m.CheckLaunch("embedding");
}

void CudaExecutor::SelectLogitRows() {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::GatherRows(m.A(Act::kResidual), m.d_logit_index, m.Rows(Act::kFinal), m.config.n_embd,
                   m.A(Act::kFinal), m.stream);
  m.CheckLaunch("logit rows");
}

void CudaExecutor::RmsNorm(Act in, Act out, int layer, Vector weight) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::RmsNormRows(m.A(in), m.VectorOf(layer, weight), m.A(out), m.Rows(in), m.config.n_embd,
                    m.config.rms_eps, m.stream);
  m.CheckLaunch("rms_norm");
}

void CudaExecutor::HeadRmsNorm(Act a, int layer, Vector weight) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const int hd = m.config.head_dim;
  cuda::HeadRmsNorm(m.A(a), m.VectorOf(layer, weight), m.n_tokens, m.Width(a) / hd, hd,
                    m.config.rms_eps, m.stream);
  m.CheckLaunch("head rms_norm");
}

void CudaExecutor::AddBias(Act a, int layer, Vector bias) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::AddBias(m.A(a), m.VectorOf(layer, bias), m.n_tokens, m.Width(a), m.stream);
  m.CheckLaunch("bias");
}

void CudaExecutor::MatMul(Act in, int layer, std::span<const MatMulOut> outs) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const int64_t rows = m.Rows(in);
  if (rows == 0) return;
  const float* x = m.A(in);
  const int64_t n_in = m.Width(in);
  bool quantized_input = false;
  int x16_format = -1;
  bool logits = false;
  for (const MatMulOut& t : outs) {
    const cuda::DeviceMatrix& w = m.MatrixOf(layer, t.matrix);
    float* y = m.A(t.out);
    const int64_t ldy = m.Width(t.out);
    logits = logits || t.out == Act::kLogits;
    if (m.options.plain) {
      cuda::MatMulPlain(w, x, rows, y, ldy, m.stream);
    } else if (rows <= m.options.matvec_rows) {
      if (IsQuantized(w.type)) {
        if (!quantized_input) {
          cuda::QuantizeActivations(x, rows, n_in, m.xq.get<cuda::ActQ8>(), m.stream);
          quantized_input = true;
        }
        cuda::MatVecQ8(w, m.xq.get<cuda::ActQ8>(), rows, y, ldy, m.stream);
      } else {
        cuda::MatVecFloat(w, x, rows, y, ldy, m.stream);
      }
    } else {
      m.Gemm(w, x, rows, y, ldy, &x16_format);
    }
  }
  m.CheckLaunch("matmul");
  if (logits) {
    const size_t bytes = static_cast<size_t>(rows * m.Width(Act::kLogits)) * 4;
    m.Fail(m.host_logits.Reserve(bytes));
    if (!m.error.ok()) return;
    m.Fail(cudaMemcpyAsync(m.host_logits.get(), m.A(Act::kLogits), bytes, cudaMemcpyDeviceToHost,
                           m.stream),
           "logits copy");
    m.logits_pending = true;
  }
}

// One rotation for every layer: Create refuses models with a window rotation.
void CudaExecutor::Rope(Act a, int /*layer*/) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const RopeConfig& r = m.rope.config();
  cuda::Rope(m.A(a), m.d_rope, m.n_tokens, m.Width(a), m.config.head_dim, r.n_rot,
             r.style == RopeStyle::kAdjacentPairs, m.stream);
  m.CheckLaunch("rope");
}

void CudaExecutor::Attention(int layer) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const int local = layer - m.shard.layer_begin;
  const int hd = m.config.head_dim;
  const cuda::PagedKv kv = m.PagesOf(local);
  cuda::StepTokens t;
  t.n_tokens = m.n_tokens;
  t.positions = m.d_positions;
  t.table_offset = m.d_table_offset;
  t.tables = m.d_tables;
  t.max_context = m.max_context;
  cuda::KvWrite w;
  w.q = m.A(Act::kQuery);
  w.k = m.A(Act::kKey);
  w.v = m.A(Act::kValue);
  w.n_head = m.shard.num_q_heads();
  w.head_dim = hd;
  w.k_mean = m.layout.k_bias != nullptr
                 ? m.k_mean.get<float>() + static_cast<size_t>(local) * kv.n_head_kv * hd
                 : nullptr;
  w.k_rotated = m.layout.k_rotated;
  w.v_rotated = m.layout.v_rotated;
  w.min_error = m.layout.rounding == KvRounding::kMinError;
  cuda::WriteKv(w, kv, t, m.stream);
  cuda::AttentionArgs a;
  a.q = m.A(Act::kQuery);
  a.out = m.A(Act::kAttention);
  a.n_head = w.n_head;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.v_rotated = m.layout.v_rotated;
  if (m.options.plain) {
    cuda::AttentionPlain(a, kv, t, m.stream);
    m.CheckLaunch("attention");
    return;
  }
  // A sequence with many tokens in the step (a prefill chunk) goes to the
  // tiled kernel; runs of the others (decodes, short chunks) to split-K.
  float* scratch = m.attention_scratch.get<float>();
  const int64_t scratch_floats = static_cast<int64_t>(m.attention_scratch.size() / 4);
  auto slice = [&](int64_t begin, int64_t count, cuda::AttentionArgs* sa, cuda::StepTokens* st) {
    *sa = a;
    *st = t;
    const int64_t offset = begin * a.n_head * hd;
    sa->q += offset;
    sa->out += offset;
    st->positions += begin;
    st->table_offset += begin;
    st->n_tokens = count;
  };
  int64_t run_begin = 0, run_end = 0;  // tokens waiting for split-K
  auto flush = [&] {
    if (run_end > run_begin) {
      cuda::AttentionArgs sa;
      cuda::StepTokens st;
      slice(run_begin, run_end - run_begin, &sa, &st);
      cuda::AttentionSplitK(sa, kv, st, scratch, scratch_floats, m.stream);
    }
    run_begin = run_end;
  };
  for (const SequenceChunk& seq : m.step.batch->sequences) {
    if (seq.first_token != run_end) {
      flush();
      run_begin = run_end = seq.first_token;
    }
    if (seq.num_tokens >= kTiledAttentionMinTokens) {
      cuda::AttentionArgs sa;
      cuda::StepTokens st;
      slice(seq.first_token, seq.num_tokens, &sa, &st);
      if (cuda::AttentionTiled(sa, kv, st, m.stream)) {
        flush();
        run_begin = run_end = seq.first_token + seq.num_tokens;
        continue;
      }
    }
    run_end = seq.first_token + seq.num_tokens;
  }
  flush();
  m.CheckLaunch("attention");
}

void CudaExecutor::SwiGlu(Act gate, Act up) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::SwiGlu(m.A(gate), m.A(up), m.n_tokens * m.Width(gate), m.stream);
  m.CheckLaunch("swiglu");
}

// Never reached: Create refuses a mixture of experts.
void CudaExecutor::MoeFeedForward(int layer) {
  impl_->Fail(UnimplementedError("mixture-of-experts layer " + std::to_string(layer) +
                                 " on a CUDA device"));
}

void CudaExecutor::Add(Act dst, Act src) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  cuda::Add(m.A(dst), m.A(src), m.Rows(dst) * m.Width(dst), m.stream);
  m.CheckLaunch("add");
}

void CudaExecutor::AllReduce(Act a) {
  Impl& m = *impl_;
  if (m.comm == nullptr || m.comm->size() == 1) return;
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = m.Rows(a) * m.Width(a);
  if (m.comm->on_device()) {
    m.Fail(m.comm->AllReduceSumOnDevice(m.A(a), n, m.stream));
  } else {
    // Staged through pinned host memory: virtual devices on one GPU, or
    // GPUs without NCCL.
    m.Fail(m.host_reduce.Reserve(static_cast<size_t>(n) * 4));
    if (m.Skip()) {
      // Still take part, with a size the others will not match, so every
      // rank fails this step instead of waiting for this one.
      const Status ignored = m.comm->AllReduceSum(nullptr, 0);
      (void)ignored;
      return;
    }
    float* host = m.host_reduce.get<float>();
    m.Fail(cudaMemcpyAsync(host, m.A(a), n * 4, cudaMemcpyDeviceToHost, m.stream), "all-reduce");
    m.Fail(cudaStreamSynchronize(m.stream), "all-reduce");
    m.Fail(m.comm->AllReduceSum(host, n));
    m.Fail(cudaMemcpyAsync(m.A(a), host, n * 4, cudaMemcpyHostToDevice, m.stream), "all-reduce");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.comm_seconds.store(m.comm_seconds.load(std::memory_order_relaxed) + seconds,
                       std::memory_order_relaxed);
}

void CudaExecutor::ReadResidual(float* dst) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const size_t bytes = static_cast<size_t>(m.n_tokens * m.config.n_embd) * 4;
  m.Fail(cudaMemcpyAsync(dst, m.A(Act::kResidual), bytes, cudaMemcpyDeviceToHost, m.stream),
         "residual copy");
  m.Fail(cudaStreamSynchronize(m.stream), "residual copy");
}

void CudaExecutor::WriteResidual(const float* src) {
  Impl& m = *impl_;
  if (m.Skip()) return;
  const size_t bytes = static_cast<size_t>(m.n_tokens * m.config.n_embd) * 4;
  m.Fail(cudaMemcpyAsync(m.A(Act::kResidual), src, bytes, cudaMemcpyHostToDevice, m.stream),
         "residual copy");
  m.Fail(cudaStreamSynchronize(m.stream), "residual copy");
}

// The block's bytes in the one-device layout (Executor::ReadBlock): per
// layer K then V, rows by slot then head. On the device a block's rows of
// one layer are contiguous (slot-major, this device's heads), so each layer's
// K and V move in one 2-D copy: `bs` rows of this device's heads, at the
// full block's pitch of all heads.
template <typename Fn>
static void ForEachLayerRun(const KvLayout& layout, const DeviceShard& shard, const Fn& fn) {
  const size_t k_row = layout.k_row_bytes(), v_row = layout.v_row_bytes();
  const size_t heads = static_cast<size_t>(layout.n_head_kv);
  const size_t bs = static_cast<size_t>(layout.block_size);
  const size_t k_bytes = k_row * heads * bs;
  const size_t layer_bytes = (k_row + v_row) * heads * bs;
  const size_t h0 = static_cast<size_t>(shard.kv_head_begin);
  for (int l = shard.layer_begin; l < shard.layer_end; ++l) {
    const size_t base = static_cast<size_t>(l) * layer_bytes;
    const int local = l - shard.layer_begin;
    fn(base + h0 * k_row, heads * k_row, local, /*value=*/false, k_row);
    fn(base + k_bytes + h0 * v_row, heads * v_row, local, /*value=*/true, v_row);
  }
}

void CudaExecutor::ReadBlock(int32_t block, uint8_t* full) const {
  Impl& m = *impl_;
  m.Fail(cudaSetDevice(m.shard.device.index), "cudaSetDevice");
  const size_t nh = static_cast<size_t>(m.shard.num_kv_heads());
  const size_t bs = static_cast<size_t>(m.layout.block_size);
  ForEachLayerRun(m.layout, m.shard,
                  [&](size_t offset, size_t pitch, int local, bool value, size_t row_bytes) {
                    const uint8_t* pages = value ? m.v_pages.get() + m.v_layer_bytes * local
                                                 : m.k_pages.get() + m.k_layer_bytes * local;
                    const uint8_t* src = pages + static_cast<size_t>(block) * bs * nh * row_bytes;
                    m.Fail(cudaMemcpy2D(full + offset, pitch, src, nh * row_bytes, nh * row_bytes,
                                        bs, cudaMemcpyDeviceToHost),
                           "KV block read");
                  });
}

void CudaExecutor::WriteBlock(int32_t block, const uint8_t* full) {
  Impl& m = *impl_;
  m.Fail(cudaSetDevice(m.shard.device.index), "cudaSetDevice");
  const size_t nh = static_cast<size_t>(m.shard.num_kv_heads());
  const size_t bs = static_cast<size_t>(m.layout.block_size);
  ForEachLayerRun(m.layout, m.shard,
                  [&](size_t offset, size_t pitch, int local, bool value, size_t row_bytes) {
                    uint8_t* pages = value ? m.v_pages.get() + m.v_layer_bytes * local
                                           : m.k_pages.get() + m.k_layer_bytes * local;
                    uint8_t* dst = pages + static_cast<size_t>(block) * bs * nh * row_bytes;
                    m.Fail(cudaMemcpy2D(dst, nh * row_bytes, full + offset, pitch, nh * row_bytes,
                                        bs, cudaMemcpyHostToDevice),
                           "KV block write");
                  });
}

DeviceCounters CudaExecutor::counters() const {
  DeviceCounters c;
  c.weight_bytes = impl_->weight_bytes;
  c.kv_bytes = (impl_->k_layer_bytes + impl_->v_layer_bytes) * impl_->shard.num_layers();
  c.comm_seconds = impl_->comm_seconds.load(std::memory_order_relaxed);
  c.graph_launches = impl_->graph_launches.load(std::memory_order_relaxed);
  return c;
}

Status CudaExecutor::TakeError() {
  Impl& m = *impl_;
  m.Fail(cudaSetDevice(m.shard.device.index), "cudaSetDevice");
  // A capture was begun in relaxed mode, so this thread need not be the one
  // that began it (a device may run on a thread of its own).
  if (m.graph_mode == Impl::GraphMode::kCapture) {
    // The captured step has not run yet: instantiate it, keep it, run it.
    cudaGraph_t graph = nullptr;
    m.Fail(cudaStreamEndCapture(m.stream, &graph), "graph capture");
    if (m.error.ok() && m.GraphSignature() != m.graph_signature) {
      // A buffer moved while the step was captured (a relaxed capture lets
      // the allocation through): the graph would use the old one.
      m.Fail(InternalError("a buffer moved during a CUDA graph capture"));
    }
    if (m.error.ok()) {
      cudaGraphExec_t exec = nullptr;
      m.Fail(cudaGraphInstantiate(&exec, graph, 0), "graph instantiation");
      if (m.error.ok()) {
        if (m.graphs.size() >= Impl::kMaxGraphs) m.DropGraphs();
        m.graphs[m.graph_key] = exec;
        m.Fail(cudaGraphLaunch(exec, m.stream), "graph launch");
        m.graph_launches.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
  } else if (m.graph_mode == Impl::GraphMode::kReplay) {
    m.Fail(cudaGraphLaunch(m.graphs[m.graph_key], m.stream), "graph launch");
    m.graph_launches.fetch_add(1, std::memory_order_relaxed);
  }
  if (m.graph_mode != Impl::GraphMode::kNone && !m.error.ok()) {
    // The step's ops were captured, not run, so nothing of it happened: the
    // caller runs it again (GraphBackend::TakeError's kAborted), and this
    // step and the following ones run without graphs.
    m.graphs_off = true;
    m.DropGraphs();
    m.graph_mode = Impl::GraphMode::kNone;
    cudaStreamSynchronize(m.stream);
    cudaGetLastError();
    Status s(StatusCode::kAborted, "CUDA graphs turned off on device " + m.shard.device.Name() +
                                       " after: " + m.error.ToString());
    m.error = Status::Ok();
    m.logits_pending = false;
    return s;
  }
  m.graph_mode = Impl::GraphMode::kNone;
  m.Fail(cudaStreamSynchronize(m.stream), "step");
  m.Fail(cudaGetLastError(), "kernel launch");
  if (m.logits_pending && m.error.ok()) {
    const int64_t w = m.Width(Act::kLogits);
    const float* src = m.host_logits.get<float>();
    for (int64_t r = 0; r < m.Rows(Act::kLogits); ++r) {
      std::memcpy(m.step.logits + r * m.step.n_vocab + m.shard.vocab_begin, src + r * w, w * 4);
    }
  }
  m.logits_pending = false;
  Status s = m.error;
  m.error = Status::Ok();
  return s;
}

Status CudaExecutor::ArgmaxLogits(std::vector<int32_t>* out) {
  Impl& m = *impl_;
  if (m.shard.vocab_begin != 0 || m.shard.vocab_end != m.config.n_vocab) {
    return FailedPreconditionError("device " + m.shard.device.Name() +
                                   " holds part of the vocabulary");
  }
  RETURN_IF_ERROR(CudaError(cudaSetDevice(m.shard.device.index), "cudaSetDevice"));
  const int64_t rows = m.Rows(Act::kLogits);
  out->resize(rows);
  if (rows == 0) return Status::Ok();
  RETURN_IF_ERROR(m.argmax.Reserve(rows * 4));
  cuda::ArgmaxRows(m.A(Act::kLogits), rows, m.config.n_vocab, m.argmax.get<int32_t>(), m.stream);
  RETURN_IF_ERROR(CudaError(
      cudaMemcpyAsync(out->data(), m.argmax.get(), rows * 4, cudaMemcpyDeviceToHost, m.stream),
      "argmax copy"));
  return CudaError(cudaStreamSynchronize(m.stream), "argmax");
}

}  // namespace kvmesh
