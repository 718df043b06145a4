// GraphBackend: the operations the model graph (worker/model/llama_graph.h)
// is written in, implemented once per kind of device (CpuExecutor; the CUDA
// executor). One backend object computes one device's share of a model:
// everything, a range of layers (layer split) or some heads and FFN columns
// of every layer (tensor split); the graph is the same in every case.
//
// Activations are named, not passed: each is a matrix of one row per token
// of the step, on the device, of a width fixed by the model and the device's
// shard (kQuery holds only the device's query heads). The backend allocates
// them; the graph only says which feeds which. Weights are named by layer
// and role and live where the backend put them when it was built.
//
// A step: BeginStep, then the graph's ops in order, all from one thread (the
// one that drives this device). Ops do not fail: their inputs were validated
// before the step (Executor::Forward), and device faults are reported by
// TakeError() at the end of the step.
#pragma once

#include <cstdint>
#include <span>

#include "common/check.h"
#include "common/status.h"
#include "worker/runtime/executor.h"

namespace kvmesh {

enum class Act {
  kResidual,    // [tokens][n_embd]: the residual stream
  kNormed,      // [tokens][n_embd]: a normalised copy of it
  kQuery,       // [tokens][device's query heads * head_dim]
  kKey,         // [tokens][device's KV heads * head_dim]
  kValue,       // [tokens][device's KV heads * head_dim_v]
  kAttention,   // [tokens][device's query heads * head_dim_v]
  kProjection,  // [tokens][n_embd]: a layer's output before it joins the residual
  kGate,        // [tokens][device's FFN columns]
  kUp,          // [tokens][device's FFN columns]
  kFinal,       // [logit rows][n_embd]: the residual rows that need logits
  kLogits,      // [logit rows][device's vocabulary rows]
};

enum class Matrix { kQ, kK, kV, kO, kGate, kUp, kDown, kOutput };
enum class Vector {
  kAttnNorm,
  kFfnNorm,
  kOutputNorm,
  kQBias,
  kKBias,
  kVBias,
  kQNorm,
  kKNorm,
  kAttnPostNorm,
  kFfnPostNorm,
};

struct MatMulOut {
  Matrix matrix;
  Act out;
};

// One step as every device sees it, computed once by the executor.
struct StepView {
  const ForwardBatch* batch = nullptr;
  std::span<const int32_t> positions;   // per token
  std::span<const int32_t> token_seq;   // per token: its sequence in batch->sequences
  std::span<const int64_t> logit_rows;  // tokens whose logits are returned, in output order
  // Host rows of n_vocab floats, one per logit row: MatMul(kOutput) puts each
  // device's vocabulary slice at its columns (kLogits is where it computes).
  float* logits = nullptr;
  int64_t n_vocab = 0;
};

// What a device holds and has spent, for info, metrics and benchmarks.
struct DeviceCounters {
  uint64_t weight_bytes = 0;    // the device's copy of its weights
  uint64_t kv_bytes = 0;        // its KV pages
  double comm_seconds = 0.0;    // inside collectives (waiting for the others included)
  uint64_t graph_launches = 0;  // steps run as one CUDA graph launch
};

class GraphBackend {
 public:
  virtual ~GraphBackend() = default;

  // Sizes the activations for the step and prepares per-position tables.
  virtual void BeginStep(const StepView& step) = 0;

  // kResidual ← the embedding rows of the step's tokens.
  virtual void Embed() = 0;
  // kFinal ← the kResidual rows listed in StepView::logit_rows.
  virtual void SelectLogitRows() = 0;
  // out ← RMSNorm(in) · weight, row by row (`layer` ignored for kOutputNorm).
  virtual void RmsNorm(Act in, Act out, int layer, Vector weight) = 0;
  // a ← RMSNorm of each head of a, times the per-head weight (kQNorm, kKNorm).
  virtual void HeadRmsNorm(Act a, int layer, Vector weight) = 0;
  // a += the layer's bias vector (kQBias, kKBias, kVBias), on every row.
  virtual void AddBias(Act a, int layer, Vector bias) = 0;
  // outs[i].out ← in · matrixᵀ for each target; targets share one conversion
  // of `in` (Q, K and V; gate and up). At most 4 targets.
  virtual void MatMul(Act in, int layer, std::span<const MatMulOut> outs) = 0;
  // Rotary position embedding on every head of kQuery or kKey, with the
  // rotation of `layer` (ModelConfig::LayerRope).
  virtual void Rope(Act a, int layer) = 0;
  // Writes kKey and kValue into the step's KV pages of `layer`, then
  // kAttention ← causal attention of kQuery over each sequence's pages:
  // scores scaled by 1/sqrt(head_dim) (by 1 where ModelConfig::query_scale
  // pre-scaled the queries), soft-capped where the config says, over the
  // layer's window (ModelConfig::LayerWindow) or the whole context.
  virtual void Attention(int layer) = 0;
  // gate ← SiLU(gate) · up.
  virtual void SwiGlu(Act gate, Act up) = 0;
  // gate ← GELU(gate) · up, GELU's tanh approximation computed as the GGUF
  // ecosystem's CPU code does (on the input rounded to f16, the result
  // rounded to f16). Only for models whose config asks for it; a backend
  // without it refuses such models when it is built.
  virtual void GeGlu(Act gate, Act up) { KVMESH_CHECK(false && "a backend without GeGlu ran it"); }
  // a ← a · factor (every element). Same condition as GeGlu.
  virtual void Scale(Act a, float factor) {
    KVMESH_CHECK(false && "a backend without Scale ran it");
  }
  // kProjection ← the layer's mixture of experts applied to kNormed: per
  // token, softmax over the router's logits, the top n_expert_used experts
  // (their weights renormalised to sum 1 where the model says so), and the
  // weighted sum of their SwiGLU feed-forwards.
  virtual void MoeFeedForward(int layer) = 0;
  // dst += src.
  virtual void Add(Act dst, Act src) = 0;
  // a ← the sum of a over the devices of a tensor split (no-op alone). The
  // collective hook: every device of the group makes the same calls.
  virtual void AllReduce(Act a) = 0;

  // Moves the residual stream between devices of a layer split (host floats,
  // tokens x n_embd).
  virtual void ReadResidual(float* dst) = 0;
  virtual void WriteResidual(const float* src) = 0;
  // Copies this device's share of KV block `block` out of / into the whole
  // block's bytes (Executor::ReadBlock's layout: per layer K then V, rows by
  // slot then head): its layers, and its heads' rows within each slot.
  virtual void ReadBlock(int32_t block, uint8_t* full) const = 0;
  virtual void WriteBlock(int32_t block, const uint8_t* full) = 0;

  // May be called from any thread (metrics scrapes).
  virtual DeviceCounters counters() const = 0;

  // The first device fault of the step, if any, and clears it. kAborted
  // means that none of the step ran (a CUDA graph could not be captured or
  // launched; the backend has turned graphs off) and the step may be run
  // again from BeginStep.
  virtual Status TakeError() = 0;
};

}  // namespace kvmesh
