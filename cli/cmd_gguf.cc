// `kvmesh gguf info FILE` and `kvmesh gguf verify FILE [--sha256 HEX]`.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/gguf/gguf_file.h"
#include "common/sha256.h"

namespace kvmesh::cli {
namespace {

int Info(const std::string& path, size_t max_elements) {
  auto file = gguf::GgufFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().message().c_str());
    return 1;
  }
  const gguf::GgufFile& f = **file;
  std::printf("file: %s\nversion: %u\nsize: %llu bytes\nalignment: %llu\ndata offset: %llu\n",
              path.c_str(), f.version(), static_cast<unsigned long long>(f.file_size()),
              static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const gguf::KeyValue& kv : f.metadata()) {
    std::string type(gguf::ValueTypeName(kv.value.type()));
    if (const gguf::Array* a = kv.value.AsArray()) {
      type += "[" + std::string(gguf::ValueTypeName(a->element_type)) + "; " +
              std::to_string(a->elements.size()) + "]";
    }
    std::printf("  %-48.*s %-22s %s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                type.c_str(), kv.value.ToString(max_elements).c_str());
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    total += t.num_bytes;
    std::printf("  %-40.*s %-8s %-22s offset %-12llu %llu bytes\n", static_cast<int>(t.name.size()),
                t.name.data(), TensorTypeName(t.type_id).c_str(), t.ShapeString().c_str(),
                static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.num_bytes));
  }
  std::printf("\ntotal tensor data: %llu bytes\n", static_cast<unsigned long long>(total));
  return 0;
}

int Verify(const std::string& path, const std::string& sha256) {
  auto digest = VerifySha256(path, sha256);
  if (!digest.ok()) {
    std::fprintf(stderr, "error: %s\n", digest.status().message().c_str());
    return 1;
  }
  std::printf("OK %s  %s\n", digest->c_str(), path.c_str());
  return 0;
}

}  // namespace

void RegisterGgufCommand(CLI::App& app, int* exit_code) {
  CLI::App* gguf = app.add_subcommand("gguf", "Inspect and verify GGUF files");
  gguf->require_subcommand(1);

  auto info_path = std::make_shared<std::string>();
  auto max_elements = std::make_shared<size_t>(8);
  CLI::App* info = gguf->add_subcommand("info", "Print a GGUF file's metadata and tensor table");
  info->add_option("file", *info_path, "GGUF file")->required();
  info->add_option("--max-array", *max_elements, "Array elements shown per key");
  info->callback([=] { *exit_code = Info(*info_path, *max_elements); });

  auto verify_path = std::make_shared<std::string>();
  auto sha = std::make_shared<std::string>();
  CLI::App* verify = gguf->add_subcommand(
      "verify", "Check a file's SHA-256 against --sha256 or the FILE.sha256 sidecar");
  verify->add_option("file", *verify_path, "GGUF file")->required();
  verify->add_option("--sha256", *sha, "Expected digest (hex)");
  verify->callback([=] { *exit_code = Verify(*verify_path, *sha); });
}

}  // namespace kvmesh::cli
