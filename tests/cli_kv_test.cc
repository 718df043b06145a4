// The KV cache commands as a user runs them: `kvmesh perplexity` (with a KL
// base), `kvmesh kv-calibrate` and the KV flags of `kvmesh run`, as real
// processes; stdout, stderr and exit codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(KVMESH_SHARED_DIR) + "/models/";
const std::string kBinary = KVMESH_CLI_BINARY;
const std::string kText = kModels + "tinystories-eval.txt";

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

nlohmann::json LastJson(const std::string& s) {
  const size_t end = s.find_last_not_of('\n');
  const size_t start = s.rfind('\n', end);
  return nlohmann::json::parse(s.substr(start == std::string::npos ? 0 : start + 1));
}

std::string Temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

// llama-perplexity -c 256 gives 2.6810 for stories260K on this text.
TEST(CliKvTest, PerplexityMatchesLlamaCpp) {
  Result r =
      RunCli("perplexity -m " + kModels + "stories260K.gguf -f " + kText + " -c 256 -t 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("[1]"));
  EXPECT_THAT(r.out, HasSubstr("[37]"));
  EXPECT_THAT(r.out, HasSubstr("Final estimate: PPL = 2.681"));
  const nlohmann::json j = LastJson(r.out);
  EXPECT_NEAR(j["ppl"].get<double>(), 2.6810, 0.0005);
  EXPECT_EQ(j["n_scored"], 37 * 127);
  EXPECT_FALSE(j.contains("kl_mean"));
}

TEST(CliKvTest, KlAgainstASavedBase) {
  const std::string base = Temp("kvmesh_cli_kv_base.logp");
  const std::string model = kModels + "tinystories-d64.gguf";
  Result save = RunCli("perplexity -m " + model + " -f " + kText +
                       " -c 256 -t 2 --chunks 8 --save-logits " + base);
  ASSERT_EQ(save.exit_code, 0) << save.out;
  // The same configuration is the base itself: KL 0, every top token equal.
  Result same = RunCli("perplexity -m " + model + " -f " + kText +
                       " -c 256 -t 2 --chunks 8 --json --kl-base " + base);
  ASSERT_EQ(same.exit_code, 0) << same.out;
  nlohmann::json j = LastJson(same.out);
  EXPECT_EQ(j["kl_mean"].get<double>(), 0.0);
  EXPECT_EQ(j["same_top_p"].get<double>(), 1.0);
  EXPECT_EQ(j["n_scored"], 8 * 127);
  // q4_0 with every transform: small but non-zero KL.
  Result q4 = RunCli("perplexity -m " + model + " -f " + kText +
                     " -c 256 -t 2 --chunks 8 --json --kv-type q4_0 --kv-rotate --kv-rotate-v "
                     "--kl-base " +
                     base);
  ASSERT_EQ(q4.exit_code, 0) << q4.out;
  j = LastJson(q4.out);
  EXPECT_EQ(j["kv"]["type"], "q4_0+rotate");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 576);
  EXPECT_GT(j["kl_mean"].get<double>(), 1e-4);
  EXPECT_LT(j["kl_mean"].get<double>(), 1e-2);
  EXPECT_GT(j["same_top_p"].get<double>(), 0.95);
  EXPECT_THAT(q4.out, HasSubstr("Mean    KLD:"));
  // A base from another context size is refused.
  Result other_ctx =
      RunCli("perplexity -m " + model + " -f " + kText + " -c 128 --chunks 8 --kl-base " + base);
  EXPECT_EQ(other_ctx.exit_code, 1);
  EXPECT_THAT(other_ctx.out, HasSubstr("the base was computed with -c 256, this run uses -c 128"));
  std::filesystem::remove(base);
}

// The 3.5-bit q3_nl cache, rotated by default, on the whole evaluation text:
// within 2% of the f16 cache's perplexity (2.8665; q3_nl measures 2.8929),
// at 448 bytes per token against f16's 2048. Mixed with q8_0 K it is closer
// still. Plain (unrotated) q3_nl is worse than rotated.
TEST(CliKvTest, ThreeBitCacheIsWithinTwoPercentOfF16) {
  const std::string model = kModels + "tinystories-d64.gguf";
  const std::string common = "perplexity -m " + model + " -f " + kText + " -c 256 -t 2 --json ";
  Result f16 = RunCli(common);
  ASSERT_EQ(f16.exit_code, 0) << f16.out;
  const double base = LastJson(f16.out)["ppl"].get<double>();
  Result q3 = RunCli(common + "--kv-type q3_nl");
  ASSERT_EQ(q3.exit_code, 0) << q3.out;
  nlohmann::json j = LastJson(q3.out);
  EXPECT_EQ(j["kv"]["type"], "q3_nl+rotate");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 448);
  const double rotated = j["ppl"].get<double>();
  EXPECT_GT(rotated, base);
  EXPECT_LT(rotated, base * 1.02);
  Result plain = RunCli(common + "--kv-type q3_nl --kv-no-rotate");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_GT(LastJson(plain.out)["ppl"].get<double>(), rotated);
  Result mixed = RunCli(common + "--kv-type-k q8_0 --kv-type-v q3_nl");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.out;
  j = LastJson(mixed.out);
  EXPECT_EQ(j["kv"]["type"], "k=q8_0+rotate,v=q3_nl+rotate");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 768);
  EXPECT_LT(j["ppl"].get<double>(), rotated);
}

TEST(CliKvTest, CalibrateThenCenter) {
  const std::string bias = Temp("kvmesh_cli_kv_d64.bias");
  const std::string model = kModels + "tinystories-d64.gguf";
  Result cal = RunCli("kv-calibrate -m " + model + " -f " + kText + " -o " + bias + " -c 256");
  ASSERT_EQ(cal.exit_code, 0) << cal.out;
  EXPECT_THAT(cal.out, HasSubstr("4 layers x 2 KV heads x 64 channels from 9472 positions"));
  // Header, model identity and name, then 4 x 2 x 64 float means.
  EXPECT_GT(std::filesystem::file_size(bias), 32u + 4 * 2 * 64 * 4);
  Result run = RunCli("run -m " + model + " -p \"Once upon a time\" -n 8 --temp 0 --json " +
                      "--kv-type q4_0 --kv-bias " + bias + " --kv-rotate");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(LastJson(run.out)["kv"]["type"], "k=q4_0+center+rotate,v=q4_0+rotate");
  // The table belongs to tinystories-d64; stories260K refuses it, naming both.
  Result other = RunCli("run -m " + kModels + "stories260K.gguf -p hi -n 2 --kv-bias " + bias);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.out, HasSubstr("measured on model 'tinystories-d64'"));
  EXPECT_THAT(other.out, HasSubstr("not on the loaded model 'llama'"));
  std::filesystem::remove(bias);
}

TEST(CliKvTest, RunReportsKvAndFitsMemory) {
  const std::string model = kModels + "tinystories-d64.gguf";
  Result r = RunCli("run -m " + model + " -p hi -n 2 --temp 0 -c 256 --json --kv-type q8_0 " +
                    "--block-size 32 --kv-memory 1MiB");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json kv = LastJson(r.out)["kv"];
  EXPECT_EQ(kv["type"], "q8_0+rotate");  // quantized pages are rotated by default
  EXPECT_EQ(kv["bytes_per_token"], 1088);
  EXPECT_EQ(kv["block_size"], 32);
  EXPECT_EQ(kv["blocks"], 30);  // 1 MiB / (1088 B x 32 tokens)
  Result small = RunCli("run -m " + model + " -p hi -n 2 -c 256 --kv-memory 64KiB");
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_THAT(small.out, HasSubstr("KV memory budget 64KiB (64.0 KiB) holds 2 blocks of 16"));
  Result fraction = RunCli("run -m " + model + " -p hi -n 2 --json -c 256 --kv-memory 0.0001");
  ASSERT_EQ(fraction.exit_code, 0) << fraction.out;
  EXPECT_GE(LastJson(fraction.out)["kv"]["blocks"].get<int>(), 16);
}

TEST(CliKvTest, HeadSizeTooSmallForQuantizedCache) {
  Result r = RunCli("run -m " + kModels + "stories260K.gguf -p hi -n 2 --kv-type q4_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("K cache type q4_0 stores blocks of 32 values, which does not "
                               "divide the head size 8; use f16, bf16 or f32 for this model"));
  Result bad = RunCli("run -m " + kModels + "stories260K.gguf -p hi --kv-type q3_k");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(
      bad.out,
      HasSubstr("--kv-type q3_k: not a KV cache type; use f32, f16, bf16, q8_0, q4_0 or q3_nl"));
}

TEST(CliKvTest, KvPlanCountsBytesAndSequencesPerTier) {
  // tinystories-d64: 4 layers, 2 KV heads of 64. A q8_0 row of 64 values is
  // 2 blocks of 34 bytes: (68 + 68) x 2 heads x 4 layers = 1088 bytes per token.
  Result r =
      RunCli("kv-plan -m " + kModels + "tinystories-d64.gguf --context 1000 --kv-type q8_0 " +
             "--kv-memory 10MiB --kv-host-memory 1GiB --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["bytes_per_token"], 1088);
  EXPECT_DOUBLE_EQ(j["bits_per_value"].get<double>(), 8.5);
  EXPECT_EQ(j["bytes_per_sequence"], 1088 * 1008);  // 63 blocks of 16
  const int64_t block = 1088 * 16;
  EXPECT_EQ(j["tiers"]["device"]["blocks"], (10 << 20) / block);
  EXPECT_EQ(j["tiers"]["device"]["sequences"], (10 << 20) / block / 63);
  EXPECT_EQ(j["tiers"]["host"]["sequences"], (int64_t{1} << 30) / block / 63);
  // A bad budget names the option.
  Result bad = RunCli("kv-plan -m " + kModels + "tinystories-d64.gguf --kv-host-memory 12XB");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.out, HasSubstr("--kv-host-memory"));
}

}  // namespace
