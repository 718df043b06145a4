// The `kvmesh` command as a user runs it: a real process, its stdout and exit
// code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using ::testing::HasSubstr;

const std::string kShared = KVMESH_SHARED_DIR;
const std::string kBinary = KVMESH_CLI_BINARY;

struct Result {
  int exit_code;
  std::string out;  // stdout and stderr together
};

Result RunCli(const std::string& args) {
  const std::string cmd = kBinary + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string LastLine(const std::string& s) {
  size_t end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  size_t start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1,
                  end - (start == std::string::npos ? 0 : start + 1) + 1);
}

nlohmann::json Golden(const std::string& rel) {
  std::ifstream in(kShared + "/golden/" + rel);
  EXPECT_TRUE(in.good()) << kShared << "/golden is missing";
  return nlohmann::json::parse(in);
}

TEST(CliTest, RunGreedyOnTheDefaultModelMatchesTheGolden) {
  const nlohmann::json g = Golden("stories260K/generate_greedy.json")[0];
  Result r = RunCli("run -p \"" + g["prompt"].get<std::string>() + "\" -n 64 --temp 0 --json -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(LastLine(r.out));
  EXPECT_EQ(j["prompt_tokens"], g["prompt_tokens"]);
  EXPECT_EQ(j["tokens"], g["generated_tokens"]);
  EXPECT_EQ(j["text"], g["generated_text"]);
  EXPECT_GT(j["timings"]["gen_tokens_per_s"].get<double>(), 0);
}

TEST(CliTest, RunStreamsTextAndStopsAtStopString) {
  Result r = RunCli("run -p \"Once upon a time\" -n 64 --temp 0 --stop \"girl\" -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(", there was a little "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("girl named")));
  EXPECT_THAT(r.out, HasSubstr("finish: stop"));
}

TEST(CliTest, SameSeedSameText) {
  Result a = RunCli("run -p \"Lily\" -n 24 --temp 1.0 --seed 7 --json");
  Result b = RunCli("run -p \"Lily\" -n 24 --temp 1.0 --seed 7 --json");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(nlohmann::json::parse(LastLine(a.out))["tokens"],
            nlohmann::json::parse(LastLine(b.out))["tokens"]);
}

TEST(CliTest, TokenizePrintsJsonIds) {
  Result r = RunCli("tokenize -p \"Hello world\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(LastLine(r.out), "[1,346,306,414,263,304,341]");
  Result nb = RunCli("tokenize --no-bos -p \"<s>\"");
  ASSERT_EQ(nb.exit_code, 0) << nb.out;
  EXPECT_NE(LastLine(nb.out), "[1]");  // text, not the BOS token
  Result ps = RunCli("tokenize --no-bos --parse-special -p \"<s>\"");
  EXPECT_EQ(LastLine(ps.out), "[1]");
}

TEST(CliTest, GgufInfoAndVerify) {
  const std::string model = kShared + "/models/stories260K.gguf";
  Result info = RunCli("gguf info " + model);
  ASSERT_EQ(info.exit_code, 0) << info.out;
  EXPECT_THAT(info.out, HasSubstr("general.architecture"));
  EXPECT_THAT(info.out, HasSubstr("blk.4.ffn_down.weight"));
  EXPECT_THAT(info.out, HasSubstr("tensors (48)"));
  Result ok = RunCli("gguf verify " + model +
                     " --sha256 270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  Result bad = RunCli("gguf verify " + model + " --sha256 " + std::string(64, 'a'));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out, HasSubstr("SHA-256 mismatch"));
}

TEST(CliTest, BrokenModelIsAClearError) {
  const std::string path = std::filesystem::temp_directory_path() / "kvmesh_cli_truncated.gguf";
  {
    std::ifstream in(kShared + "/models/stories260K.gguf", std::ios::binary);
    std::string bytes(5000, '\0');
    in.read(bytes.data(), bytes.size());
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
  }
  Result r = RunCli("run -m " + path + " -p hi -n 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr(path));
  EXPECT_THAT(r.out, HasSubstr("at offset"));
  Result missing = RunCli("run -m /no/such.gguf -p hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("/no/such.gguf: model file not found"));
  std::filesystem::remove(path);
}

// A GPU asked for where there is none: exit 1 and a message naming the
// device, never a crash (on a GPU machine the run simply works).
TEST(CliTest, CudaDeviceWithoutAGpuIsAClearError) {
  Result r = RunCli("run -p hi -n 4 --devices cuda:0");
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has a GPU: the run worked";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("device cuda:0"));
  EXPECT_TRUE(r.out.find("no usable CUDA device") != std::string::npos ||
              r.out.find("built without nvcc") != std::string::npos)
      << r.out;
  Result virtual_cpu = RunCli("run -p hi -n 4 --devices cpu:0.1");
  EXPECT_EQ(virtual_cpu.exit_code, 1);
  EXPECT_THAT(virtual_cpu.out, HasSubstr("only CUDA devices can be virtual"));
}

}  // namespace
