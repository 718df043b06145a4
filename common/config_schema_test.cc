#include "common/config_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

struct Cfg {
  std::string model = "m.gguf";
  int64_t threads = 2;
  double fraction = 0.5;
  bool verbose = false;
  std::vector<std::string> workers;
  std::string token;
};

ConfigSchema Schema(Cfg* c) {
  ConfigSchema s("kvmesh-test", "KVMESH_TEST_");
  s.AddString("model", &c->model, "model path");
  s.AddInt("threads", &c->threads, 1, 64, "threads");
  s.AddDouble("kv_fraction", &c->fraction, 0.0, 1.0, "fraction");
  s.AddBool("verbose", &c->verbose, "verbose");
  s.AddStringList("workers", &c->workers, "workers");
  s.AddString("admin_token", &c->token, "token");
  s.MarkSecret("admin_token");
  return s;
}

TEST(ConfigSchemaTest, PrecedenceFileThenEnvThenFlags) {
  Cfg c;
  ConfigSchema s = Schema(&c);
  ASSERT_TRUE(s.ApplyYamlText("threads: 4\nworkers: [a:1, b:2]\nverbose: true\n", "f.yaml").ok());
  EXPECT_EQ(c.threads, 4);
  EXPECT_EQ(c.workers, (std::vector<std::string>{"a:1", "b:2"}));
  ASSERT_TRUE(
      s.ApplyEnv({"KVMESH_TEST_THREADS=8", "PATH=/bin", "KVMESH_TEST_WORKERS=x:1,y:2"}).ok());
  EXPECT_EQ(c.threads, 8);
  EXPECT_EQ(c.workers, (std::vector<std::string>{"x:1", "y:2"}));
  const char* argv[] = {"prog",      "--threads=16", "--kv-fraction", "0.25",
                        "--verbose", "--model",      "z.gguf"};
  ASSERT_TRUE(s.Parse(7, argv).ok());
  EXPECT_EQ(c.threads, 16);
  EXPECT_EQ(c.fraction, 0.25);
  EXPECT_TRUE(c.verbose);
  EXPECT_EQ(c.model, "z.gguf");
}

TEST(ConfigSchemaTest, ErrorsNameTheProblem) {
  Cfg c;
  ConfigSchema s = Schema(&c);
  EXPECT_THAT(s.ApplyYamlText("thread: 4\n", "f.yaml").message(),
              HasSubstr("f.yaml (line 1): unknown option \"thread\""));
  EXPECT_THAT(s.ApplyYamlText("threads: many\n", "f.yaml").message(),
              HasSubstr("option threads: \"many\" is not an integer"));
  EXPECT_THAT(s.ApplyYamlText("threads: 100\n", "f.yaml").message(), HasSubstr("outside 1..64"));
  EXPECT_THAT(s.ApplyYamlText("threads: [1\n", "f.yaml").message(), HasSubstr("not valid YAML"));
  // A key that is not a scalar (it threw YAML::TypedBadConversion).
  EXPECT_EQ(s.ApplyYamlText("? [a]\n: 1\n", "f.yaml").message(),
            "f.yaml (line 1): an option name must be a word");
  EXPECT_THAT(s.ApplyEnv({"KVMESH_TEST_THREDS=2"}).message(),
              HasSubstr("KVMESH_TEST_THREDS is not a kvmesh-test option"));
  const char* argv[] = {"prog", "--tread", "3"};
  EXPECT_THAT(s.Parse(3, argv).message(), HasSubstr("unknown flag --tread"));
  const char* argv2[] = {"prog", "--verbose=maybe"};
  EXPECT_THAT(s.Parse(2, argv2).message(), HasSubstr("not a boolean"));
  const char* argv3[] = {"prog", "--config", "/no/such.yaml"};
  EXPECT_THAT(s.Parse(3, argv3).message(), HasSubstr("/no/such.yaml"));
}

TEST(ConfigSchemaTest, DumpShowsEffectiveValuesAndHidesSecrets) {
  Cfg c;
  c.token = "hunter2";
  ConfigSchema s = Schema(&c);
  const std::string dump = s.Dump();
  EXPECT_THAT(dump, HasSubstr("model: \"m.gguf\"\n"));
  EXPECT_THAT(dump, HasSubstr("threads: 2\n"));
  EXPECT_THAT(dump, HasSubstr("admin_token: \"<set>\"\n"));
  EXPECT_THAT(dump, ::testing::Not(HasSubstr("hunter2")));
  // A secret list (API keys) is hidden as a list.
  s.MarkSecret("workers");
  EXPECT_THAT(s.Dump(), HasSubstr("workers: []\n"));
  c.workers = {"sk-1", "sk-2"};
  EXPECT_THAT(s.Dump(), HasSubstr("workers: [\"<set>\"]\n"));
  EXPECT_THAT(s.Dump(), ::testing::Not(HasSubstr("sk-1")));
  // The dump is itself a valid config.
  Cfg d;
  ConfigSchema t = Schema(&d);
  EXPECT_TRUE(
      t.ApplyYamlText(
           "model: \"m.gguf\"\nthreads: 2\nkv_fraction: 0.5\nverbose: false\nworkers: []\n", "dump")
          .ok());
}

}  // namespace
}  // namespace kvmesh
