#include "worker/model/synthetic_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <string>

#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

using T = TensorType;

const std::string kVocab = std::string(KVMESH_SHARED_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";

// Writes `shape` in `mix` with the llama vocabulary, loads it and removes
// the file.
StatusOr<std::unique_ptr<Model>> SynthesizeAndLoad(const SyntheticShape& shape, SyntheticMix mix) {
  ThreadPool pool(2);
  SynthesizeOptions options;
  options.shape = shape;
  options.mix = mix;
  options.vocab_path = kVocab;
  options.output_path = testing::TempDir() + "/synth_" + shape.name + ".gguf";
  EXPECT_TRUE(SynthesizeModel(options, pool).ok());
  auto model = Model::Load(options.output_path);
  std::remove(options.output_path.c_str());
  return model;
}

std::string Layer(int i, const char* tensor) {
  return "blk." + std::to_string(i) + "." + tensor + ".weight";
}

TEST(SyntheticShapeTest, NamedShapesAreTheRealModels) {
  const auto llama = FindSyntheticShape("llama-1b");
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->n_layer, 16);
  EXPECT_EQ(llama->n_embd, 2048);
  EXPECT_EQ(llama->n_head, 32);
  EXPECT_EQ(llama->n_head_kv, 8);
  EXPECT_EQ(llama->n_ff, 8192);
  EXPECT_EQ(llama->rope_freq_base, 500000.0f);
  EXPECT_TRUE(llama->tied_embeddings);
  const auto tiny = FindSyntheticShape("tinyllama-1.1b");
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->n_layer, 22);
  EXPECT_EQ(tiny->n_head_kv, 4);
  EXPECT_EQ(tiny->n_ff, 5632);
  EXPECT_EQ(tiny->rope_freq_base, 10000.0f);
  EXPECT_FALSE(tiny->tied_embeddings);
  EXPECT_EQ(tiny->default_vocab, "vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_FALSE(FindSyntheticShape("llama-7b").has_value());
  EXPECT_EQ(SyntheticShapeNames().back(), "tiny-gemma3");
  for (const std::string& name : SyntheticShapeNames()) {
    EXPECT_TRUE(FindSyntheticShape(name).has_value()) << name;
  }
  // Qwen3-MoE's layout: 8 experts, 2 per token.
  const auto moe = FindSyntheticShape("qwen3-moe-tiny");
  ASSERT_TRUE(moe.has_value());
  EXPECT_EQ(moe->arch, "qwen3moe");
  EXPECT_EQ(moe->n_expert, 8);
  EXPECT_EQ(moe->n_expert_used, 2);
  for (const std::string& name : SyntheticShapeNames()) {
    EXPECT_TRUE(FindSyntheticShape(name).has_value()) << name;
  }
  EXPECT_EQ(ParseSyntheticMix("q4_k_m"), SyntheticMix::kQ4_K_M);
  EXPECT_EQ(ParseSyntheticMix("q4_k"), std::nullopt);
}

// Layers whose attn_v and ffn_down get Q6_K in a K mix, as llama.cpp picks
// them (use_more_bits).
std::set<int> MoreBitsLayers(SyntheticMix mix, int n_layer) {
  std::set<int> layers;
  for (int i = 0; i < n_layer; ++i) {
    const T v = TensorTypeFor(mix, Layer(i, "attn_v"), n_layer, true, 2048);
    const T down = TensorTypeFor(mix, Layer(i, "ffn_down"), n_layer, true, 8192);
    EXPECT_EQ(v, down) << i;
    if (v == T::kQ6_K) layers.insert(i);
  }
  return layers;
}

TEST(TensorTypeForTest, KMixesFollowLlamaCpp) {
  EXPECT_EQ(MoreBitsLayers(SyntheticMix::kQ4_K_M, 16), (std::set<int>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(MoreBitsLayers(SyntheticMix::kQ5_K_M, 16), (std::set<int>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(MoreBitsLayers(SyntheticMix::kQ4_K_M, 22),
            (std::set<int>{0, 1, 4, 7, 10, 13, 16, 19, 20, 21}));
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, Layer(2, "attn_v"), 16, true, 2048), T::kQ4_K);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ5_K_M, Layer(2, "ffn_down"), 16, true, 8192), T::kQ5_K);
  for (const char* t : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) {
    EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, Layer(0, t), 16, true, 2048), T::kQ4_K) << t;
    EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ5_K_M, Layer(0, t), 16, true, 2048), T::kQ5_K) << t;
  }
  // The head is Q6_K; a tied embedding is the head; an untied one keeps the base.
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, "token_embd.weight", 16, true, 2048), T::kQ6_K);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, "token_embd.weight", 22, false, 2048), T::kQ4_K);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, "output.weight", 22, false, 2048), T::kQ6_K);
  // Rows that are no whole number of super-blocks fall back as llama.cpp's do.
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, Layer(3, "ffn_gate"), 16, true, 96), T::kQ5_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ5_K_M, Layer(3, "ffn_gate"), 16, true, 96), T::kQ5_1);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_K_M, "output.weight", 16, false, 96), T::kQ8_0);
}

TEST(TensorTypeForTest, LowBitMixesFollowLlamaCpp) {
  const SyntheticMix q3 = SyntheticMix::kQ3_K_M;
  EXPECT_EQ(TensorTypeFor(q3, Layer(1, "attn_v"), 32, true, 2048), T::kQ5_K);
  EXPECT_EQ(TensorTypeFor(q3, Layer(2, "attn_v"), 32, true, 2048), T::kQ4_K);
  EXPECT_EQ(TensorTypeFor(q3, Layer(1, "ffn_down"), 32, true, 8192), T::kQ5_K);  // first 16th
  EXPECT_EQ(TensorTypeFor(q3, Layer(6, "ffn_down"), 32, true, 8192), T::kQ4_K);  // more bits
  EXPECT_EQ(TensorTypeFor(q3, Layer(5, "ffn_down"), 32, true, 8192), T::kQ3_K);
  EXPECT_EQ(TensorTypeFor(q3, Layer(5, "attn_output"), 32, true, 2048), T::kQ4_K);
  EXPECT_EQ(TensorTypeFor(q3, Layer(5, "ffn_up"), 32, true, 2048), T::kQ3_K);
  EXPECT_EQ(TensorTypeFor(q3, "output.weight", 32, false, 2048), T::kQ6_K);
  const SyntheticMix q2 = SyntheticMix::kQ2_K;
  for (const char* t : {"attn_v", "ffn_down", "attn_output"}) {
    EXPECT_EQ(TensorTypeFor(q2, Layer(5, t), 32, true, 2048), T::kQ3_K) << t;
  }
  EXPECT_EQ(TensorTypeFor(q2, Layer(5, "ffn_gate"), 32, true, 2048), T::kQ2_K);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kIQ4_XS, Layer(0, "attn_v"), 32, true, 2048), T::kIQ4_XS);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kIQ4_NL, Layer(0, "attn_q"), 32, true, 2048), T::kIQ4_NL);
  const SyntheticMix iq3 = SyntheticMix::kIQ3_S;
  EXPECT_EQ(TensorTypeFor(iq3, Layer(0, "attn_v"), 32, false, 2048, /*n_gqa=*/4), T::kQ4_K);
  EXPECT_EQ(TensorTypeFor(iq3, Layer(0, "attn_v"), 32, false, 2048, /*n_gqa=*/2), T::kIQ3_S);
  EXPECT_EQ(TensorTypeFor(iq3, Layer(3, "ffn_down_exps"), 32, false, 2048, 4), T::kIQ3_S);
  EXPECT_EQ(TensorTypeFor(iq3, "token_embd.weight", 32, false, 2048, 4), T::kIQ3_S);
  EXPECT_EQ(TensorTypeFor(iq3, "output.weight", 32, false, 2048, 4), T::kQ6_K);
  // Rows that are no whole number of super-blocks fall back to IQ4_NL.
  for (SyntheticMix mix : {q3, q2, SyntheticMix::kIQ4_XS, iq3}) {
    EXPECT_EQ(TensorTypeFor(mix, Layer(3, "ffn_gate"), 32, true, 96), T::kIQ4_NL);
  }
}

TEST(TensorTypeForTest, LegacyAndFloatMixes) {
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_0, Layer(0, "attn_v"), 16, true, 2048), T::kQ4_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_0, Layer(0, "ffn_down"), 16, true, 8192), T::kQ4_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_0, "token_embd.weight", 16, true, 2048), T::kQ6_K);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ4_0, "token_embd.weight", 22, false, 2048), T::kQ4_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ8_0, "token_embd.weight", 16, true, 2048), T::kQ8_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kQ8_0, Layer(5, "attn_v"), 16, true, 2048), T::kQ8_0);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kF16, "token_embd.weight", 16, true, 2048), T::kF16);
  EXPECT_EQ(TensorTypeFor(SyntheticMix::kF16, Layer(0, "ffn_down"), 16, true, 8192), T::kF16);
}

SyntheticShape TinyShape(bool tied) {
  return SyntheticShape{"tiny", 2, 256, 4, 2, 512, 500000.0f, tied, 256, ""};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class SynthesizeTest : public testing::TestWithParam<SyntheticMix> {};

TEST_P(SynthesizeTest, WritesAModelThatLoadsAndRuns) {
  const SyntheticMix mix = GetParam();
  const bool tied = mix != SyntheticMix::kQ4_K_M;  // one untied shape too
  SynthesizeOptions options;
  options.shape = TinyShape(tied);
  options.mix = mix;
  options.vocab_path = kVocab;
  options.output_path =
      testing::TempDir() + "/synth_" + std::string(SyntheticMixName(mix)) + ".gguf";
  options.seed = 7;
  ThreadPool pool(2);
  auto report = SynthesizeModel(options, pool);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->n_vocab, 32000);
  EXPECT_EQ(report->num_tensors, 2 + 9 * 2 + (tied ? 0 : 1));

  auto model = Model::Load(options.output_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.n_vocab, 32000);
  EXPECT_EQ(c.rope.freq_base, 500000.0f);
  EXPECT_EQ((*model)->weights().tied_output, tied);
  const gguf::GgufFile& file = (*model)->file();
  EXPECT_EQ(*file.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*file.GetBool("tokenizer.ggml.add_bos_token"), true);
  for (const gguf::TensorInfo& t : file.tensors()) {
    const std::string name(t.name);
    if (t.dims.size() == 1) {
      EXPECT_EQ(t.type(), T::kF32) << name;
    } else {
      EXPECT_EQ(t.type(), TensorTypeFor(mix, name, 2, tied, t.dims[0])) << name;
    }
  }

  // Logits are finite and spread out (a clear argmax), as a trained model's.
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, T::kF16, T::kF16};
  auto exec = ModelExecutor::CreateOnCpu(**model, layout, 4, 2);
  ASSERT_TRUE(exec.ok());
  std::vector<int32_t> table = {0, 1, 2, 3};
  ForwardBatch batch;
  batch.tokens = {1, 450, 4996, 17354};
  batch.sequences.push_back({0, 4, 0, table, LogitsMode::kLast});
  ForwardOutput out;
  ASSERT_TRUE((*exec)->Forward(batch, &out).ok());
  double sum = 0, sum_squares = 0;
  for (int i = 0; i < out.n_vocab; ++i) {
    ASSERT_TRUE(std::isfinite(out.Row(0)[i]));
    sum += out.Row(0)[i];
    sum_squares += static_cast<double>(out.Row(0)[i]) * out.Row(0)[i];
  }
  const double mean = sum / out.n_vocab;
  const double sd = std::sqrt(sum_squares / out.n_vocab - mean * mean);
  EXPECT_GT(sd, 1.0);
  EXPECT_LT(sd, 10.0);
}

INSTANTIATE_TEST_SUITE_P(EveryMix, SynthesizeTest,
                         testing::Values(SyntheticMix::kF16, SyntheticMix::kQ8_0,
                                         SyntheticMix::kQ4_0, SyntheticMix::kQ4_K_M,
                                         SyntheticMix::kQ5_K_M, SyntheticMix::kQ3_K_M,
                                         SyntheticMix::kQ2_K, SyntheticMix::kIQ4_NL,
                                         SyntheticMix::kIQ4_XS, SyntheticMix::kIQ3_S),
                         [](const testing::TestParamInfo<SyntheticMix>& info) {
                           return std::string(SyntheticMixName(info.param));
                         });

// Gemma 2's options come from its keys (and llama.cpp's defaults where a
// file has none); its post-norms load, its head is its embedding.
TEST(SynthesizedFileTest, Gemma2ReadsItsWindowCapsAndPostNorms) {
  SynthesizeOptions options;
  options.shape = *FindSyntheticShape("tiny-gemma2");
  options.mix = SyntheticMix::kQ8_0;
  options.vocab_path = kVocab;
  options.output_path = testing::TempDir() + "/synth_tiny_gemma2.gguf";
  ThreadPool pool(2);
  ASSERT_TRUE(SynthesizeModel(options, pool).ok());
  auto model = Model::Load(options.output_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch, ModelArch::kGemma2);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_TRUE(c.has_post_norms);
  EXPECT_EQ(c.embed_scale, 16.0f);
  EXPECT_EQ(c.query_scale, 0.125f);  // 1/sqrt(head size 64)
  EXPECT_EQ(c.attn_softcap, 0.25f);
  EXPECT_EQ(c.final_softcap, 15.0f);
  EXPECT_EQ(c.LayerWindow(0), 32);
  EXPECT_EQ(c.LayerWindow(1), 0);
  EXPECT_EQ(c.LayerWindow(2), 32);
  EXPECT_EQ(c.LayerWindow(3), 0);
  EXPECT_TRUE((*model)->weights().tied_output);
  for (const LayerWeights& l : (*model)->weights().layers) {
    EXPECT_EQ(l.attn_post_norm.size(), 256u);
    EXPECT_EQ(l.ffn_post_norm.size(), 256u);
  }
  std::remove(options.output_path.c_str());
}

// Gemma 3's options: its window pattern, a rotation per kind of layer
// (the windowed ones with rope.freq_base_swa and no scaling), q/k norms, no
// score cap; llama.cpp's defaults where a file has no key (a period of 6,
// and no window at all without attention.sliding_window).
TEST(SynthesizedFileTest, Gemma3ReadsItsWindowPatternAndTwoRotations) {
  auto synth = [](const SyntheticShape& shape) {
    return SynthesizeAndLoad(shape, SyntheticMix::kF16);
  };
  SyntheticShape shape = *FindSyntheticShape("tiny-gemma3");
  auto model = synth(shape);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch, ModelArch::kGemma3);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_TRUE(c.has_post_norms);
  EXPECT_TRUE(c.has_qk_norm);
  EXPECT_EQ(c.embed_scale, 16.0f);
  EXPECT_EQ(c.query_scale, 0.125f);
  EXPECT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.final_softcap, 15.0f);
  const std::vector<int> windows = {32, 32, 0, 32, 32, 0};
  for (int l = 0; l < c.n_layer; ++l) {
    EXPECT_EQ(c.LayerWindow(l), windows[l]) << l;
    const RopeConfig& rope = c.LayerRope(l);
    EXPECT_EQ(rope.freq_base, windows[l] > 0 ? 10000.0f : 1000000.0f) << l;
    EXPECT_EQ(rope.freq_scale, windows[l] > 0 ? 1.0f : 0.125f) << l;
    EXPECT_EQ(rope.scaling, windows[l] > 0 ? RopeScaling::kNone : RopeScaling::kLinear) << l;
    EXPECT_EQ(rope.style, RopeStyle::kHalves);
  }
  for (const LayerWeights& l : (*model)->weights().layers) {
    EXPECT_EQ(l.q_norm.size(), 64u);
    EXPECT_EQ(l.attn_post_norm.size(), 256u);
  }

  shape.sliding_window_pattern = 0;  // no key: every sixth layer is global
  auto six = synth(shape);
  ASSERT_TRUE(six.ok());
  EXPECT_EQ((*six)->config().sliding_window_period, 6);
  EXPECT_EQ((*six)->config().LayerWindow(5), 0);
  EXPECT_EQ((*six)->config().LayerWindow(2), 32);
  shape.sliding_window = 0;  // no key: no window, one rotation
  auto global = synth(shape);
  ASSERT_TRUE(global.ok());
  EXPECT_EQ((*global)->config().LayerWindow(0), 0);
  EXPECT_FALSE((*global)->config().window_rope.has_value());
}

// A llama file with llama.attention.sliding_window (Mistral 7B v0.1's
// window) is windowed on every layer; a window of 0, or none, is no window.
TEST(SynthesizedFileTest, ALlamaWindowCoversEveryLayer) {
  auto synth = [](int window) {
    SyntheticShape shape = *FindSyntheticShape("tiny-mistral");
    shape.sliding_window = window;
    return SynthesizeAndLoad(shape, SyntheticMix::kQ8_0);
  };
  auto windowed = synth(32);
  ASSERT_TRUE(windowed.ok()) << windowed.status().ToString();
  const ModelConfig& c = (*windowed)->config();
  EXPECT_EQ(c.arch, ModelArch::kLlama);
  for (int l = 0; l < c.n_layer; ++l) EXPECT_EQ(c.LayerWindow(l), 32) << l;
  EXPECT_EQ(c.MaxWindow(), 32);
  auto plain = synth(0);  // no key written
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->config().MaxWindow(), 0);
}

// Phi-3 fuses Q, K and V in one tensor and the gate and up in another: the
// engine's matrices are views of their rows, in that order.
TEST(SynthesizedFileTest, Phi3FusedTensorsAreReadAsViewsOfTheirRows) {
  SynthesizeOptions options;
  options.shape = *FindSyntheticShape("tiny-phi3");
  options.shape.n_layer = 2;
  options.mix = SyntheticMix::kQ8_0;
  options.vocab_path = kVocab;
  options.output_path = testing::TempDir() + "/synth_tiny_phi3.gguf";
  ThreadPool pool(2);
  ASSERT_TRUE(SynthesizeModel(options, pool).ok());
  auto model = Model::Load(options.output_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->config().arch, ModelArch::kPhi3);
  EXPECT_EQ((*model)->config().rope.style, RopeStyle::kHalves);
  const gguf::GgufFile& file = (*model)->file();
  const gguf::TensorInfo* qkv = file.FindTensor("blk.1.attn_qkv.weight");
  const gguf::TensorInfo* up = file.FindTensor("blk.1.ffn_up.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(file.FindTensor("blk.1.ffn_gate.weight"), nullptr);
  const LayerWeights& l = (*model)->weights().layers[1];
  EXPECT_EQ(l.wq.data, qkv->data);
  EXPECT_EQ(l.wk.data, l.wq.data + l.wq.num_bytes());
  EXPECT_EQ(l.wv.data, l.wk.data + l.wk.num_bytes());
  EXPECT_EQ(l.wv.data + l.wv.num_bytes(), qkv->data + qkv->num_bytes);
  EXPECT_EQ(l.wq.rows, 256);
  EXPECT_EQ(l.wk.rows, 256);
  EXPECT_EQ(l.w_gate.data, up->data);
  EXPECT_EQ(l.w_up.data, up->data + up->num_bytes / 2);
  EXPECT_EQ(l.w_up.rows, 768);
}

// A weight of a type the kernels lack is refused with an error that names
// the tensor and the type. I16 elements are as long as F16 ones, so retyping
// one F16 tensor in a written file keeps every offset valid.
TEST(SynthesizedFileTest, AWeightOfATypeWithoutKernelsIsRefusedByName) {
  SynthesizeOptions options;
  options.shape = TinyShape(true);
  options.mix = SyntheticMix::kF16;
  options.vocab_path = kVocab;
  options.output_path = testing::TempDir() + "/synth_i16.gguf";
  ThreadPool pool(2);
  ASSERT_TRUE(SynthesizeModel(options, pool).ok());
  std::string bytes = ReadAll(options.output_path);
  // Tensor info: name (u64 length, bytes), n_dims u32, dims u64 each, type u32.
  const std::string name = "blk.1.ffn_up.weight";
  const size_t at = bytes.find(name);
  ASSERT_NE(at, std::string::npos);
  const size_t type_at = at + name.size() + 4 + 2 * 8;
  uint32_t type;
  std::memcpy(&type, bytes.data() + type_at, 4);
  ASSERT_EQ(type, static_cast<uint32_t>(T::kF16));
  type = static_cast<uint32_t>(T::kI16);
  std::memcpy(bytes.data() + type_at, &type, 4);
  {
    std::ofstream out(options.output_path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto model = Model::Load(options.output_path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("tensor blk.1.ffn_up.weight has type I16"),
            std::string::npos)
      << model.status().message();
}

// tiny-qwen3: a Qwen3 (per-head q/k norms, head size 64) with the Qwen2
// vocabulary, a long context and a chat template in the file.
TEST(SynthesizeTest, TinyQwen3CarriesItsChatTemplate) {
  auto shape = FindSyntheticShape("tiny-qwen3");
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->default_chat_template, "chat-templates/templates/Qwen-Qwen3-0.6B.jinja");
  SynthesizeOptions options;
  options.shape = *shape;
  options.shape.n_layer = 2;  // the same file, quicker
  options.mix = SyntheticMix::kQ8_0;
  options.vocab_path = std::string(KVMESH_SHARED_DIR) + "/" + shape->default_vocab;
  options.chat_template = "{{ messages[0].content }}";
  options.output_path = testing::TempDir() + "/synth_tiny_qwen3.gguf";
  ThreadPool pool(2);
  auto report = SynthesizeModel(options, pool);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->n_vocab, 151936);
  auto model = Model::Load(options.output_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch_name, "qwen3");
  EXPECT_TRUE(c.has_qk_norm);
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.n_ctx_train, 65536);
  EXPECT_EQ(*(*model)->file().GetString("tokenizer.chat_template"), "{{ messages[0].content }}");
  EXPECT_NE((*model)->file().FindTensor("blk.1.attn_k_norm.weight"), nullptr);
}

// A header whose block_count is far past what the file holds (found by
// gguf_fuzz: it made the loader allocate that many layers) is refused with
// both numbers, before any layer is read.
TEST(SynthesizeTest, AHugeBlockCountIsRefused) {
  SynthesizeOptions options;
  options.shape = TinyShape(true);
  options.mix = SyntheticMix::kF16;
  options.vocab_path = kVocab;
  options.output_path = testing::TempDir() + "/synth_block_count.gguf";
  ThreadPool pool(2);
  ASSERT_TRUE(SynthesizeModel(options, pool).ok());
  std::string bytes = ReadAll(options.output_path);
  const std::string key = "llama.block_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t value_at = at + key.size() + 4;  // past the key and its u32 value type
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + value_at, 4);
  ASSERT_EQ(count, 2u);
  count = 1000000000u;
  std::memcpy(bytes.data() + value_at, &count, 4);
  const std::string bad = testing::TempDir() + "/synth_block_count_bad.gguf";
  std::ofstream(bad, std::ios::binary) << bytes;
  auto model = Model::Load(bad);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("block_count 1000000000 is more than the file's 20"),
            std::string::npos)
      << model.status().ToString();
}

TEST(SynthesizeDeterminismTest, SameSeedSameBytesWhateverTheThreads) {
  SynthesizeOptions options;
  options.shape = TinyShape(true);
  options.mix = SyntheticMix::kQ4_K_M;  // K quants, Q6_K head: the slowest quantizers
  options.vocab_path = kVocab;
  options.seed = 3;
  const std::string base = testing::TempDir() + "/synth_det";
  ThreadPool one(1), three(3);
  options.output_path = base + "_1.gguf";
  ASSERT_TRUE(SynthesizeModel(options, one).ok());
  options.output_path = base + "_3.gguf";
  ASSERT_TRUE(SynthesizeModel(options, three).ok());
  EXPECT_TRUE(ReadAll(base + "_1.gguf") == ReadAll(base + "_3.gguf"));
  options.seed = 4;
  options.output_path = base + "_seed4.gguf";
  ASSERT_TRUE(SynthesizeModel(options, three).ok());
  EXPECT_FALSE(ReadAll(base + "_1.gguf") == ReadAll(base + "_seed4.gguf"));
}

}  // namespace
}  // namespace kvmesh
