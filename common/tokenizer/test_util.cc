#include "common/tokenizer/test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "common/gguf/gguf_file.h"

namespace kvmesh::testing_util {

std::string SharedDir() { return std::string(KVMESH_SHARED_DIR); }

std::string ReadFileOrFail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path << " (is the shared test data at " << SharedDir()
                  << "?)";
    return "";
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::unique_ptr<Tokenizer> LoadTokenizerOrFail(const std::string& gguf_path) {
  if (!std::filesystem::exists(gguf_path)) {
    ADD_FAILURE() << gguf_path << " does not exist (is the shared test data at " << SharedDir()
                  << "?)";
    return nullptr;
  }
  auto file = gguf::GgufFile::Open(gguf_path);
  if (!file.ok()) {
    ADD_FAILURE() << file.status().ToString();
    return nullptr;
  }
  auto config = TokenizerConfigFromGguf(**file);
  if (!config.ok()) {
    ADD_FAILURE() << config.status().ToString();
    return nullptr;
  }
  auto tokenizer = Tokenizer::Create(std::move(*config));
  if (!tokenizer.ok()) {
    ADD_FAILURE() << tokenizer.status().ToString();
    return nullptr;
  }
  return std::move(*tokenizer);
}

const Tokenizer* SharedTokenizerOrFail(const std::string& gguf_path) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(gguf_path);
  if (it == cache->end()) {
    std::unique_ptr<Tokenizer> tokenizer = LoadTokenizerOrFail(gguf_path);
    if (tokenizer == nullptr) return nullptr;
    it = cache->emplace(gguf_path, std::move(tokenizer)).first;
  }
  return it->second.get();
}

std::string VocabPath(const std::string& name) {
  return SharedDir() + "/vocab/ggml-vocab-" + name + ".gguf";
}

std::vector<TokenizerVector> LoadVectorsOrFail(const std::string& name) {
  const std::string inputs = ReadFileOrFail(VocabPath(name) + ".inp");
  const std::string outputs = ReadFileOrFail(VocabPath(name) + ".out");
  if (inputs.empty() || outputs.empty()) return {};

  // Texts are separated (and the file ended) by this exact line; nothing is
  // stripped, empty texts between separators are tests too.
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t begin = 0;;) {
    const size_t end = inputs.find(separator, begin);
    if (end == std::string::npos) {
      if (begin < inputs.size()) texts.push_back(inputs.substr(begin));
      break;
    }
    texts.push_back(inputs.substr(begin, end - begin));
    begin = end + separator.size();
  }

  std::vector<TokenizerVector> vectors;
  std::istringstream lines(outputs);
  std::string line;
  for (const std::string& text : texts) {
    if (!std::getline(lines, line)) {
      ADD_FAILURE() << name << ": fewer .out lines than .inp texts";
      return {};
    }
    TokenizerVector vector{text, {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) vector.ids.push_back(id);
    vectors.push_back(std::move(vector));
  }
  return vectors;
}

}  // namespace kvmesh::testing_util
