// `kvmesh chat-template render TEMPLATE.jinja CASES.json`: renders every case
// with the Jinja engine (common/jinja) as ../shared/chat-templates/
// render_reference.py does, with its placeholder special tokens and fixed
// clock, and prints its JSON shape: {case_id: {"output": TEXT} | {"error":
// MESSAGE}}, keys sorted, indent 1. `--case ID` prints one case's raw text
// (exit 1 with the error on stderr if the template fails).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "common/jinja/jinja.h"
#include "common/jinja/reference_cases.h"

namespace kvmesh::cli {
namespace {

struct ChatTemplateOptions {
  std::string template_path;
  std::string cases_path;
  std::string case_id;
};

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Render(const ChatTemplateOptions& o) {
  auto source = ReadAll(o.template_path);
  auto cases_text = ReadAll(o.cases_path);
  if (!source.ok() || !cases_text.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 (source.ok() ? cases_text.status() : source.status()).message().c_str());
    return 1;
  }
  nlohmann::ordered_json cases;
  try {
    cases = nlohmann::ordered_json::parse(*cases_text);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "error: %s: %s\n", o.cases_path.c_str(), e.what());
    return 1;
  }
  if (!cases.is_array()) {
    std::fprintf(stderr, "error: %s: expected a JSON array of cases\n", o.cases_path.c_str());
    return 1;
  }
  auto tmpl = jinja::Template::Parse(*source);
  jinja::RenderOptions options;
  options.now = jinja::ReferenceNow;
  nlohmann::json out = nlohmann::json::object();  // sorted keys, as the reference
  for (const auto& c : cases) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) {
      std::fprintf(stderr, "error: %s: every case needs a string \"id\"\n", o.cases_path.c_str());
      return 1;
    }
    const std::string id = c["id"];
    StatusOr<std::string> text = tmpl.ok() ? tmpl->Render(jinja::ReferenceVariables(c), options)
                                           : StatusOr<std::string>(tmpl.status());
    if (!o.case_id.empty()) {
      if (id != o.case_id) continue;
      if (!text.ok()) {
        std::fprintf(stderr, "%s\n", text.status().message().c_str());
        return 1;
      }
      std::fwrite(text->data(), 1, text->size(), stdout);
      return 0;
    }
    out[id] = text.ok() ? nlohmann::json{{"output", *text}}
                        : nlohmann::json{{"error", text.status().message()}};
  }
  if (!o.case_id.empty()) {
    std::fprintf(stderr, "error: no case '%s' in %s\n", o.case_id.c_str(), o.cases_path.c_str());
    return 1;
  }
  std::printf("%s\n", out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

void RegisterChatTemplateCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ChatTemplateOptions>();
  CLI::App* group = app.add_subcommand("chat-template", "Render Jinja chat templates");
  group->require_subcommand(1);
  CLI::App* render = group->add_subcommand(
      "render", "Render each case of CASES.json with TEMPLATE.jinja (JSON: {id: {output|error}})");
  render->add_option("template", o->template_path, "Jinja chat template file")->required();
  render->add_option("cases", o->cases_path, "JSON array of cases")->required();
  render->add_option("--case", o->case_id, "print one case's raw text instead");
  render->callback([o, exit_code] { *exit_code = Render(*o); });
}

}  // namespace kvmesh::cli
