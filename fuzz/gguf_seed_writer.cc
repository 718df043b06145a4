// Writes small, valid GGUF seed files for the fuzzer into a directory: a
// minimal llama model (2 layers, F32/Q8_0/Q4_K tensors, an SPM vocabulary)
// and files exercising every metadata value type and nested arrays.
#include <cstdio>
#include <string>
#include <vector>

#include "common/gguf/gguf_writer.h"

namespace {

using kvmesh::TensorType;
using kvmesh::gguf::GgufWriter;

std::vector<uint8_t> Zeros(size_t n) { return std::vector<uint8_t>(n, 0); }

void AddVocab(GgufWriter& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
  }
  for (const char* t : {"\xe2\x96\x81", "\xe2\x96\x81H", "e", "l", "o", "\xe2\x96\x81w"})
    tokens.push_back(t);
  std::vector<float> scores(tokens.size());
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (size_t i = 3; i < 259; ++i) types[i] = 6;
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  w.SetFloat32Array("tokenizer.ggml.scores", scores);
  w.SetInt32Array("tokenizer.ggml.token_type", types);
  w.SetUint32("tokenizer.ggml.bos_token_id", 1);
  w.SetUint32("tokenizer.ggml.eos_token_id", 2);
  w.SetUint32("tokenizer.ggml.unknown_token_id", 0);
}

bool WriteModel(const std::string& path, TensorType matrix_type, int64_t n_embd) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", "seed");
  w.SetUint32("llama.block_count", 2);
  w.SetUint32("llama.embedding_length", static_cast<uint32_t>(n_embd));
  w.SetUint32("llama.feed_forward_length", static_cast<uint32_t>(n_embd));
  w.SetUint32("llama.attention.head_count", 4);
  w.SetUint32("llama.attention.head_count_kv", 2);
  w.SetUint32("llama.context_length", 64);
  w.SetFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  AddVocab(w);
  const int64_t n_vocab = 265;
  const int64_t kv = n_embd / 2;
  auto bytes = [&](TensorType t, int64_t cols, int64_t rows) {
    return Zeros(*kvmesh::RowBytes(t, cols) * rows);
  };
  bool ok = w.AddTensor("token_embd.weight", TensorType::kF32, {n_embd, n_vocab},
                        bytes(TensorType::kF32, n_embd, n_vocab))
                .ok();
  ok &= w.AddTensor("output_norm.weight", TensorType::kF32, {n_embd},
                    bytes(TensorType::kF32, n_embd, 1))
            .ok();
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ok &= w.AddTensor(p + "attn_norm.weight", TensorType::kF32, {n_embd},
                      bytes(TensorType::kF32, n_embd, 1))
              .ok();
    ok &= w.AddTensor(p + "ffn_norm.weight", TensorType::kF32, {n_embd},
                      bytes(TensorType::kF32, n_embd, 1))
              .ok();
    ok &= w.AddTensor(p + "attn_q.weight", matrix_type, {n_embd, n_embd},
                      bytes(matrix_type, n_embd, n_embd))
              .ok();
    ok &=
        w.AddTensor(p + "attn_k.weight", matrix_type, {n_embd, kv}, bytes(matrix_type, n_embd, kv))
            .ok();
    ok &=
        w.AddTensor(p + "attn_v.weight", matrix_type, {n_embd, kv}, bytes(matrix_type, n_embd, kv))
            .ok();
    ok &= w.AddTensor(p + "attn_output.weight", matrix_type, {n_embd, n_embd},
                      bytes(matrix_type, n_embd, n_embd))
              .ok();
    ok &= w.AddTensor(p + "ffn_gate.weight", matrix_type, {n_embd, n_embd},
                      bytes(matrix_type, n_embd, n_embd))
              .ok();
    ok &= w.AddTensor(p + "ffn_up.weight", matrix_type, {n_embd, n_embd},
                      bytes(matrix_type, n_embd, n_embd))
              .ok();
    ok &= w.AddTensor(p + "ffn_down.weight", matrix_type, {n_embd, n_embd},
                      bytes(matrix_type, n_embd, n_embd))
              .ok();
  }
  return ok && w.WriteFile(path).ok();
}

bool WriteValueKinds(const std::string& path) {
  GgufWriter w(64);
  w.SetUint32("u32", 7);
  w.SetInt32("i32", -7);
  w.SetUint64("u64", 1ull << 40);
  w.SetFloat32("f32", 0.5f);
  w.SetBool("b", true);
  w.SetString("s", "text \xe4\xb8\xad");
  w.SetStringArray("sa", {"a", "", "ccc"});
  w.SetInt32Array("ia", {1, -2, 3});
  std::vector<uint8_t> nested = {9, 0, 0,   0,  1, 0, 0, 0, 0, 0, 0, 0,  // array of 1 array
                                 3, 0, 0,   0,  2, 0, 0, 0, 0, 0, 0, 0,  // of 2 int16
                                 1, 0, 255, 255};
  w.SetRaw("nested", kvmesh::gguf::ValueType::kArray, nested);
  return w.AddTensor("t", TensorType::kQ8_0, {32, 2}, Zeros(68)).ok() && w.WriteFile(path).ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = WriteModel(dir + "/seed_f32.gguf", TensorType::kF32, 32);
  ok &= WriteModel(dir + "/seed_q8_0.gguf", TensorType::kQ8_0, 64);
  ok &= WriteModel(dir + "/seed_q4_k.gguf", TensorType::kQ4_K, 256);
  ok &= WriteValueKinds(dir + "/seed_values.gguf");
  if (!ok) {
    std::fprintf(stderr, "failed to write seeds into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
