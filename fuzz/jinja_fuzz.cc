// Fuzzes the Jinja engine (common/jinja): the input is a template, rendered
// with a small conversation under tight limits. Parse and render errors are
// expected; crashes, hangs, leaks and sanitizer reports are findings.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/jinja/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": null,
                  "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                 {"role": "tool", "content": [{"type": "text", "text": "ok"}]}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
  })");
  auto t =
      kvmesh::jinja::Template::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) return 0;
  kvmesh::jinja::RenderOptions options;
  options.limits.max_steps = 200000;
  options.limits.max_depth = 64;
  options.limits.max_output_bytes = 1 << 20;
  options.now = [] { return std::tm{}; };
  auto out = t->Render(vars, options);
  (void)out;
  return 0;
}
