#include "fuzz/fuzz_vocab.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "common/gguf/gguf_file.h"

namespace kvmesh::fuzz {

std::string VocabDir() {
  if (const char* env = std::getenv("KVMESH_FUZZ_VOCAB_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(KVMESH_SHARED_DIR) + "/vocab";
}

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& gguf_path) {
  ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(gguf_path));
  ASSIGN_OR_RETURN(TokenizerConfig config, TokenizerConfigFromGguf(*file));
  return Tokenizer::Create(std::move(config));
}

std::vector<NamedTokenizer> LoadTokenizers(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".gguf") files.push_back(entry.path());
  }
  if (ec) std::fprintf(stderr, "fuzz: cannot list %s: %s\n", dir.c_str(), ec.message().c_str());
  std::sort(files.begin(), files.end());

  std::vector<NamedTokenizer> tokenizers;
  for (const fs::path& path : files) {
    StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadTokenizer(path.string());
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "fuzz: skipping %s: %s\n", path.c_str(),
                   tokenizer.status().ToString().c_str());
      continue;
    }
    tokenizers.push_back({path.filename().string(), std::move(tokenizer).value()});
  }
  return tokenizers;
}

}  // namespace kvmesh::fuzz
