// `kvmesh tokenize`: print the token ids of a text as a JSON array.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "common/gguf/gguf_file.h"
#include "common/model_path.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;
  bool no_bos = false;
  bool parse_special = false;
  bool pieces = false;
};

int Tokenize(const TokenizeOptions& o) {
  auto path = ResolveModelPath(o.model);
  if (!path.ok()) {
    std::fprintf(stderr, "error: %s\n", path.status().message().c_str());
    return 1;
  }
  std::string text = o.prompt;
  if (!o.file.empty()) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "error: %s: cannot read\n", o.file.c_str());
      return 1;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto file = gguf::GgufFile::Open(*path);
  if (!file.ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().message().c_str());
    return 1;
  }
  auto config = TokenizerConfigFromGguf(**file);
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
    return 1;
  }
  auto tok = Tokenizer::Create(std::move(*config));
  if (!tok.ok()) {
    std::fprintf(stderr, "error: %s\n", tok.status().message().c_str());
    return 1;
  }
  const std::vector<int32_t> ids = (*tok)->Encode(text, !o.no_bos, o.parse_special);
  if (o.pieces) {
    for (int32_t id : ids) {
      nlohmann::json piece = (*tok)->TokenToPiece(id, true);
      std::printf("%6d %s\n", id,
                  piece.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
  }
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace

void RegisterTokenizeCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd =
      app.add_subcommand("tokenize", "Print the token ids of a text (JSON array, last line)");
  cmd->add_option("-m,--model", o->model, "GGUF model or vocab file (default: the default model)");
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "Text to tokenize");
  auto* f = cmd->add_option("-f,--file", o->file, "Read the text from a file");
  p->excludes(f);
  f->excludes(p);
  cmd->add_flag("--no-bos", o->no_bos, "Do not add BOS/EOS even if the model asks for them");
  cmd->add_flag("--parse-special", o->parse_special,
                "Match special-token text (e.g. <s>) as special tokens");
  cmd->add_flag("--pieces", o->pieces, "Also print each token's text, one per line");
  cmd->callback([o, exit_code, p, f] {
    if (p->count() == 0 && f->count() == 0) {
      std::fprintf(stderr, "error: give the text with -p TEXT or -f FILE\n");
      *exit_code = 2;
      return;
    }
    *exit_code = Tokenize(*o);
  });
}

}  // namespace kvmesh::cli
