// Helpers shared by the tokenizer tests: locating and loading the shared test
// data (vocab files, llama.cpp's test vectors, golden outputs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace kvmesh::testing_util {

// KVMESH_SHARED_DIR (the project's ../shared).
std::string SharedDir();
// The whole file; the test fails (and the result is empty) when unreadable.
std::string ReadFileOrFail(const std::string& path);
// Loads a GGUF file's tokenizer; fails the test on error (returns nullptr).
std::unique_ptr<Tokenizer> LoadTokenizerOrFail(const std::string& gguf_path);
// The same, loaded once per test binary and shared (tokenizers are
// immutable); lives until exit.
const Tokenizer* SharedTokenizerOrFail(const std::string& gguf_path);

// One llama.cpp test vector: the text and the ids llama_tokenize gives it
// (add_special=false, parse_special=false).
struct TokenizerVector {
  std::string text;
  std::vector<int32_t> ids;
};
// Reads shared/vocab/ggml-vocab-<name>.gguf.{inp,out}.
std::vector<TokenizerVector> LoadVectorsOrFail(const std::string& name);
std::string VocabPath(const std::string& name);

}  // namespace kvmesh::testing_util
