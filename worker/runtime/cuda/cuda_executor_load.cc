#include <cstring>

#include "worker/kv/kv_bias.h"
#include "worker/runtime/cuda/cuda_executor_impl.h"
#include "worker/runtime/cuda/cuda_memory.h"
#include "worker/runtime/weight_shard.h"

namespace kvmesh {
namespace {

// Lays the shard's weights out in one allocation: offsets first, then one
// upload per tensor.
class WeightUpload {
 public:
  size_t Add(const void* src, size_t bytes) {
    const size_t offset = total_;
    if (bytes > 0) items_.push_back({src, bytes, offset});
    total_ += AlignUp(bytes);
    return offset;
  }
  size_t total() const { return total_; }
  Status CopyTo(uint8_t* base) const {
    for (const Item& i : items_) {
      RETURN_IF_ERROR(CudaError(cudaMemcpy(base + i.offset, i.src, i.bytes, cudaMemcpyHostToDevice),
                                "weight upload"));
    }
    return Status::Ok();
  }

 private:
  struct Item {
    const void* src;
    size_t bytes;
    size_t offset;
  };
  std::vector<Item> items_;
  size_t total_ = 0;
};

}  // namespace

Status CudaExecutor::Impl::Init(const Model& model) {
  const std::string name = "device " + shard.device.Name();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return UnavailableError(name + ": no usable CUDA device on this machine");
  }
  if (shard.device.index >= count) {
    return InvalidArgumentError(name + ": this machine has " + std::to_string(count) +
                                " CUDA device(s), cuda:0..cuda:" + std::to_string(count - 1));
  }
  RETURN_IF_ERROR(CudaError(cudaSetDevice(shard.device.index), name));
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(CudaError(cudaGetDeviceProperties(&prop, shard.device.index), name));
  if (prop.major < 8) {
    return FailedPreconditionError(name + " (" + prop.name + ", sm_" + std::to_string(prop.major) +
                                   std::to_string(prop.minor) +
                                   ") is older than the sm_80 this build's kernels need");
  }
  const ModelConfig& c = config;
  if (c.head_dim > 256 || c.head_dim_v != c.head_dim) {
    return InvalidArgumentError(name + ": the CUDA kernels take head sizes up to 256 with K and " +
                                "V of one size (this model: K " + std::to_string(c.head_dim) +
                                ", V " + std::to_string(c.head_dim_v) + ")");
  }
  WeightShard ws = WeightShard::Make(model.weights(), c, shard);
  const ModelWeights& w = ws.weights;
  std::vector<const WeightMatrix*> matrices;
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      matrices.push_back(m);
    }
  }
  if (shard.embeds) matrices.push_back(&w.token_embd);
  if (shard.computes_logits()) matrices.push_back(&w.output);
  for (const WeightMatrix* m : matrices) {
    if (!cuda::IsCudaWeightType(m->type)) {
      return InvalidArgumentError(name + ": tensor '" + m->name + "' has type " +
                                  TensorTypeName(m->type) +
                                  ", which the CUDA kernels do not take (F32, F16, BF16, Q8_0, "
                                  "Q4_0, Q4_K, Q5_K, Q6_K)");
    }
  }

  // Lay out and size everything before allocating any of it.
  WeightUpload upload;
  auto add_matrix = [&](const WeightMatrix& m) {
    cuda::DeviceMatrix d;
    d.type = m.type;
    d.row_bytes = m.row_bytes;
    d.n_out = m.rows;
    d.n_in = m.cols;
    d.data = reinterpret_cast<const uint8_t*>(upload.Add(m.data, m.num_bytes()));
    weight_bytes += m.num_bytes();
    return d;
  };
  auto add_vector = [&](const std::vector<float>& v) {
    return v.empty() ? static_cast<const float*>(nullptr)
                     : reinterpret_cast<const float*>(upload.Add(v.data(), v.size() * 4) + 1);
  };
  for (const LayerWeights& l : w.layers) {
    layers.push_back({add_matrix(l.wq), add_matrix(l.wk), add_matrix(l.wv), add_matrix(l.wo),
                      add_matrix(l.w_gate), add_matrix(l.w_up), add_matrix(l.w_down)});
    vectors.push_back({add_vector(l.attn_norm), add_vector(l.ffn_norm), add_vector(l.bq),
                       add_vector(l.bk), add_vector(l.bv), add_vector(l.q_norm),
                       add_vector(l.k_norm)});
  }
  if (shard.embeds) embedding = add_matrix(w.token_embd);
  const bool output_is_embedding =
      w.tied_output && shard.embeds && shard.vocab_begin == 0 && shard.vocab_end == c.n_vocab;
  if (shard.computes_logits() && !output_is_embedding) output = add_matrix(w.output);
  output_norm = add_vector(w.output_norm);

  const size_t bs = static_cast<size_t>(layout.block_size);
  const size_t heads = static_cast<size_t>(shard.num_kv_heads());
  k_layer_bytes = static_cast<size_t>(num_blocks) * bs * heads * layout.k_row_bytes();
  v_layer_bytes = static_cast<size_t>(num_blocks) * bs * heads * layout.v_row_bytes();
  const uint64_t kv_bytes = (k_layer_bytes + v_layer_bytes) * shard.num_layers();
  const uint64_t workspace = shard.workspace_bytes;
  size_t free_bytes = 0, total_bytes = 0;
  RETURN_IF_ERROR(CudaError(cudaMemGetInfo(&free_bytes, &total_bytes), name + ": cudaMemGetInfo"));
  const uint64_t needed = upload.total() + kv_bytes + workspace;
  if (needed > free_bytes) {
    return ResourceExhaustedError(
        name + ": needs " + FormatBytes(needed) + " (weights " + FormatBytes(upload.total()) +
        ", KV pages " + FormatBytes(kv_bytes) + ", workspace " + FormatBytes(workspace) +
        ") but has " + FormatBytes(free_bytes) + " free of " + FormatBytes(total_bytes) +
        "; lower --kv-memory or split the model over more devices");
  }

  RETURN_IF_ERROR(weights.Reserve(upload.total()).WithPrefix(name));
  RETURN_IF_ERROR(upload.CopyTo(weights.get()).WithPrefix(name));
  // Offsets become pointers (vectors were offset by one to tell them from
  // null).
  uint8_t* base = weights.get();
  auto fix_matrix = [&](cuda::DeviceMatrix& m) {
    m.data = base + reinterpret_cast<size_t>(m.data);
  };
  auto fix_vector = [&](const float*& v) {
    if (v != nullptr) v = reinterpret_cast<const float*>(base + reinterpret_cast<size_t>(v) - 1);
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerMatrices& l = layers[i];
    for (cuda::DeviceMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      fix_matrix(*m);
    }
    LayerVectors& v = vectors[i];
    for (const float** p : {&v.attn_norm, &v.ffn_norm, &v.bq, &v.bk, &v.bv, &v.q_norm, &v.k_norm}) {
      fix_vector(*p);
    }
  }
  if (shard.embeds) fix_matrix(embedding);
  if (shard.computes_logits()) {
    if (output_is_embedding) {
      output = embedding;  // one copy of a tied matrix
    } else {
      fix_matrix(output);
    }
  }
  fix_vector(output_norm);

  RETURN_IF_ERROR(k_pages.Reserve(std::max<size_t>(1, k_layer_bytes * shard.num_layers())));
  RETURN_IF_ERROR(v_pages.Reserve(std::max<size_t>(1, v_layer_bytes * shard.num_layers())));
  if (layout.k_bias != nullptr) {
    std::vector<float> mean;
    for (int l = shard.layer_begin; l < shard.layer_end; ++l) {
      for (int h = shard.kv_head_begin; h < shard.kv_head_end; ++h) {
        const float* row = layout.k_bias->Row(l, h);
        mean.insert(mean.end(), row, row + c.head_dim);
      }
    }
    RETURN_IF_ERROR(k_mean.Reserve(mean.size() * 4));
    RETURN_IF_ERROR(CudaError(
        cudaMemcpy(k_mean.get(), mean.data(), mean.size() * 4, cudaMemcpyHostToDevice), name));
  }

  RETURN_IF_ERROR(CudaError(cudaStreamCreate(&stream), name + ": cudaStreamCreate"));
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) {
    return InternalError(name + ": cublasCreate failed");
  }
  cublasSetStream(cublas, stream);
  RETURN_IF_ERROR(cublas_workspace.Reserve(kCudaCublasWorkspaceBytes));
  cublasSetWorkspace(cublas, cublas_workspace.get(), kCudaCublasWorkspaceBytes);
  RETURN_IF_ERROR(dequant.Reserve(kCudaDequantChunkBytes));
  RETURN_IF_ERROR(attention_scratch.Reserve(kCudaAttentionScratchBytes));

  const int64_t hd = c.head_dim;
  auto set_width = [&](Act a, int64_t v) { width[static_cast<int>(a)] = v; };
  set_width(Act::kResidual, c.n_embd);
  set_width(Act::kNormed, c.n_embd);
  set_width(Act::kProjection, c.n_embd);
  set_width(Act::kQuery, shard.num_q_heads() * hd);
  set_width(Act::kAttention, shard.num_q_heads() * hd);
  set_width(Act::kKey, shard.num_kv_heads() * hd);
  set_width(Act::kValue, shard.num_kv_heads() * hd);
  set_width(Act::kGate, shard.num_ff());
  set_width(Act::kUp, shard.num_ff());
  set_width(Act::kFinal, c.n_embd);
  set_width(Act::kLogits, shard.vocab_end - shard.vocab_begin);
  return Status::Ok();
}

}  // namespace kvmesh
