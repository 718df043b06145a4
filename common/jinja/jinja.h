// A Jinja2 template engine for chat templates.
//
// It renders the templates models publish (GGUF `tokenizer.chat_template`,
// Hugging Face `chat_template`) as Hugging Face transformers renders them:
// Jinja2 in an immutable sandbox with trim_blocks, lstrip_blocks and loop
// controls, the `generation` tag, a JSON `tojson` (ensure_ascii off),
// `raise_exception(message)` and `strftime_now(format)`. Values follow
// Python's rules (truthiness, `+`, comparisons, `str()` of lists and dicts,
// float repr), because templates are written against them. Checked byte for
// byte against Python Jinja2 on real templates
// (common/jinja/jinja_golden_test.cc).
//
// Supported: {{ }}, {% %}, {# #} with `-`/`+` whitespace control; if/elif/
// else, for (unpacking, `if` filter, else, loop.*), set (names, tuples,
// namespace attributes, blocks), macro (defaults, varargs, kwargs, caller),
// call, filter, raw, generation, break/continue; literals, arithmetic,
// comparisons, `in`, `is` tests, `~`, conditional expressions, slicing;
// the filters, tests and str/list/dict methods templates use (see
// jinja.cc). Not supported (an error names them): include, import,
// extends, block, and any filter or test not listed.
//
// Sandbox: no I/O; lists and dicts passed in cannot be changed (as in
// Jinja's immutable sandbox: `append`, `pop`, `update` raise), only
// namespace() objects take assignments; and every render is bounded in
// steps, nesting depth and output bytes (RenderLimits), so a hostile
// template ends with an error instead of hanging or exhausting memory.
//
// A Template is immutable after Parse and may be rendered from any number of
// threads at once.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvmesh::jinja {

struct RenderLimits {
  int64_t max_steps = 20'000'000;      // statements and expressions evaluated
  int max_depth = 200;                 // nested macro calls and expressions
  size_t max_output_bytes = 64 << 20;  // rendered text
};

struct RenderOptions {
  RenderLimits limits;
  // The clock strftime_now reads (local time). Empty: the real clock.
  std::function<std::tm()> now;
};

namespace internal {
struct Node;
}

class Template {
 public:
  // Parses `source`. Errors name the line and what is wrong (an unknown
  // filter or test is an error here, as in Jinja).
  static StatusOr<Template> Parse(std::string_view source);

  // Renders with `variables` (a JSON object: messages, tools, bos_token, ...).
  // A template that raises (raise_exception, a type error, an undefined
  // attribute of an undefined value, a sandbox violation, a limit) gives an
  // error naming it.
  StatusOr<std::string> Render(const nlohmann::ordered_json& variables,
                               const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const internal::Node> root_;
};

}  // namespace kvmesh::jinja
