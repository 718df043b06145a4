// Every chat template of ../shared/chat-templates against the reference
// renderings of Python Jinja2 (configured as transformers configures it):
// the same bytes where the reference renders, an error where it fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/jinja/jinja.h"
#include "common/jinja/reference_cases.h"

namespace kvmesh::jinja {
namespace {

const std::string kDir = std::string(KVMESH_SHARED_DIR) + "/chat-templates";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(JinjaGoldenTest, EveryTemplateAndCaseMatchesTheReference) {
  ASSERT_TRUE(std::filesystem::exists(kDir)) << kDir << " is missing";
  const auto cases = nlohmann::ordered_json::parse(ReadFile(kDir + "/cases.json"));
  RenderOptions options;
  options.now = ReferenceNow;
  int pairs = 0, equal = 0, both_fail = 0;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kDir + "/templates")) {
    names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string source = ReadFile(kDir + "/templates/" + name + ".jinja");
    const auto golden = nlohmann::ordered_json::parse(ReadFile(kDir + "/golden/" + name + ".json"));
    auto tmpl = Template::Parse(source);
    for (const auto& c : cases) {
      const std::string id = c["id"];
      const auto& want = golden[id];
      ++pairs;
      StatusOr<std::string> got = tmpl.ok() ? tmpl->Render(ReferenceVariables(c), options)
                                            : StatusOr<std::string>(tmpl.status());
      if (want.contains("error")) {
        if (!got.ok()) {
          ++both_fail;
          ++equal;
        } else {
          ADD_FAILURE() << name << " / " << id << ": the reference fails ("
                        << want["error"].get<std::string>() << ") but this rendered";
        }
        continue;
      }
      if (!got.ok()) {
        ADD_FAILURE() << name << " / " << id << ": " << got.status().ToString();
        continue;
      }
      const std::string w = want["output"];
      if (*got == w) {
        ++equal;
      } else {
        size_t k = 0;
        while (k < w.size() && k < got->size() && w[k] == (*got)[k]) ++k;
        const size_t from = k > 60 ? k - 60 : 0;
        ADD_FAILURE() << name << " / " << id << ": differs at byte " << k
                      << "\n  want: " << nlohmann::json(w.substr(from, 140)).dump()
                      << "\n  got:  " << nlohmann::json(got->substr(from, 140)).dump();
      }
    }
  }
  std::printf("chat templates: %d of %d pairs match the reference (%d fail in both)\n", equal,
              pairs, both_fail);
  EXPECT_EQ(equal, pairs);
}

}  // namespace
}  // namespace kvmesh::jinja
