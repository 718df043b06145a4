// Real vocabularies for the fuzz targets that need a tokenizer: the
// vocab-only GGUF files of ../shared/vocab (see its README), loaded once when
// a fuzzer starts (LLVMFuzzerInitialize), never per input.
//
// The folder is $KVMESH_FUZZ_VOCAB_DIR when set, else <KVMESH_SHARED_DIR>/vocab
// as configured at build time. The tokenizers are immutable and the targets
// keep them until exit. Single-threaded, like libFuzzer's input loop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh::fuzz {

std::string VocabDir();

// The tokenizer of one GGUF file; the error names the file.
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& gguf_path);

struct NamedTokenizer {
  std::string name;  // the file name, e.g. "ggml-vocab-qwen2.gguf"
  std::unique_ptr<Tokenizer> tokenizer;
};

// Every *.gguf in `dir` whose tokenizer loads, by file name. A file that does
// not load is reported on stderr and skipped: kvmesh supports most, not all,
// of llama.cpp's pre-tokenizers.
std::vector<NamedTokenizer> LoadTokenizers(const std::string& dir);

}  // namespace kvmesh::fuzz
