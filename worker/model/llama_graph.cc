#include "worker/model/llama_graph.h"

namespace kvmesh {

void LlamaGraph::AttentionBlock(GraphBackend& b, int layer) const {
  b.RmsNorm(Act::kResidual, Act::kNormed, layer, Vector::kAttnNorm);
  const MatMulOut qkv[] = {
      {Matrix::kQ, Act::kQuery}, {Matrix::kK, Act::kKey}, {Matrix::kV, Act::kValue}};
  b.MatMul(Act::kNormed, layer, qkv);
  if (config_.has_qkv_bias) {
    b.AddBias(Act::kQuery, layer, Vector::kQBias);
    b.AddBias(Act::kKey, layer, Vector::kKBias);
    b.AddBias(Act::kValue, layer, Vector::kVBias);
  }
  if (config_.has_qk_norm) {
    b.HeadRmsNorm(Act::kQuery, layer, Vector::kQNorm);
    b.HeadRmsNorm(Act::kKey, layer, Vector::kKNorm);
  }
  b.Rope(Act::kQuery, layer);
  b.Rope(Act::kKey, layer);
  if (config_.query_scale > 0.0f) b.Scale(Act::kQuery, config_.query_scale);
  b.Attention(layer);
  const MatMulOut out[] = {{Matrix::kO, Act::kProjection}};
  b.MatMul(Act::kAttention, layer, out);
  b.AllReduce(Act::kProjection);
  if (config_.has_post_norms) {
    b.RmsNorm(Act::kProjection, Act::kProjection, layer, Vector::kAttnPostNorm);
  }
  b.Add(Act::kResidual, Act::kProjection);
}

void LlamaGraph::FeedForwardBlock(GraphBackend& b, int layer) const {
  b.RmsNorm(Act::kResidual, Act::kNormed, layer, Vector::kFfnNorm);
  if (config_.is_moe()) {
    b.MoeFeedForward(layer);
    b.AllReduce(Act::kProjection);
    b.Add(Act::kResidual, Act::kProjection);
    return;
  }
  const MatMulOut gate_up[] = {{Matrix::kGate, Act::kGate}, {Matrix::kUp, Act::kUp}};
  b.MatMul(Act::kNormed, layer, gate_up);
  if (config_.ffn_activation == FfnActivation::kGeluTanh) {
    b.GeGlu(Act::kGate, Act::kUp);
  } else {
    b.SwiGlu(Act::kGate, Act::kUp);
  }
  const MatMulOut down[] = {{Matrix::kDown, Act::kProjection}};
  b.MatMul(Act::kGate, layer, down);
  b.AllReduce(Act::kProjection);
  if (config_.has_post_norms) {
    b.RmsNorm(Act::kProjection, Act::kProjection, layer, Vector::kFfnPostNorm);
  }
  b.Add(Act::kResidual, Act::kProjection);
}

void LlamaGraph::Run(GraphBackend& b, const Range& range) const {
  if (range.embed) {
    b.Embed();
    if (config_.embed_scale > 0.0f) b.Scale(Act::kResidual, config_.embed_scale);
  }
  for (int layer = range.layer_begin; layer < range.layer_end; ++layer) {
    AttentionBlock(b, layer);
    FeedForwardBlock(b, layer);
  }
  if (range.logits) {
    b.SelectLogitRows();
    b.RmsNorm(Act::kFinal, Act::kFinal, 0, Vector::kOutputNorm);
    const MatMulOut logits[] = {{Matrix::kOutput, Act::kLogits}};
    b.MatMul(Act::kFinal, 0, logits);
  }
}

}  // namespace kvmesh
