// Memory fit: budget parsing, block counts, and the errors for budgets that
// cannot hold one sequence.
#include "worker/kv/kv_memory_fit.h"

#include <gtest/gtest.h>

namespace kvmesh {
namespace {

KvLayout D64(TensorType type) {
  KvLayout layout;
  layout.n_layer = 4;
  layout.n_head_kv = 2;
  layout.head_dim = 64;
  layout.k_type = type;
  layout.v_type = type;
  return layout;
}

TEST(KvMemoryBudgetTest, Sizes) {
  EXPECT_EQ(ParseKvMemoryBudget("512MiB")->bytes, 512ull << 20);
  EXPECT_EQ(ParseKvMemoryBudget("512M")->bytes, 512ull << 20);
  EXPECT_EQ(ParseKvMemoryBudget("2G")->bytes, 2ull << 30);
  EXPECT_EQ(ParseKvMemoryBudget("2g")->bytes, 2ull << 30);
  EXPECT_EQ(ParseKvMemoryBudget("1.5GiB")->bytes, 3ull << 29);
  EXPECT_EQ(ParseKvMemoryBudget("4GB")->bytes, 4000000000ull);
  EXPECT_EQ(ParseKvMemoryBudget("64 KiB")->bytes, 65536u);
  EXPECT_EQ(ParseKvMemoryBudget("1073741824")->bytes, 1073741824u);
  EXPECT_EQ(ParseKvMemoryBudget("100b")->bytes, 100u);
  EXPECT_EQ(ParseKvMemoryBudget("2G")->fraction, 0.0);
  EXPECT_EQ(ParseKvMemoryBudget(" 2G ")->text, "2G");
}

TEST(KvMemoryBudgetTest, Fractions) {
  EXPECT_EQ(ParseKvMemoryBudget("0.5")->fraction, 0.5);
  EXPECT_EQ(ParseKvMemoryBudget("1")->fraction, 1.0);
  EXPECT_EQ(ParseKvMemoryBudget("25%")->fraction, 0.25);
  EXPECT_EQ(ParseKvMemoryBudget("0.5")->bytes, 0u);
}

TEST(KvMemoryBudgetTest, Errors) {
  const std::string hint =
      "; give a size (512MiB, 2G, 4GB, 1073741824) or a fraction of the memory left after the "
      "weights (0.5, 50%)";
  EXPECT_EQ(ParseKvMemoryBudget("lots").status().message(), "--kv-memory 'lots': no number" + hint);
  EXPECT_EQ(ParseKvMemoryBudget("3 parsecs").status().message(),
            "--kv-memory '3 parsecs': unknown unit 'parsecs'" + hint);
  EXPECT_EQ(ParseKvMemoryBudget("1.5").status().message(),
            "--kv-memory '1.5': a plain number above 1 must be a whole number of bytes" + hint);
  EXPECT_EQ(ParseKvMemoryBudget("0").status().message(),
            "--kv-memory '0': the budget must be positive" + hint);
  EXPECT_EQ(ParseKvMemoryBudget("150%").status().message(),
            "--kv-memory '150%': a percentage must be in (0, 100]" + hint);
}

TEST(KvMemoryFitTest, AbsoluteBudget) {
  // f16: 2048 B per token, 32 KiB per 16-token block; 1 MiB holds 32 blocks.
  KvFitInputs inputs;
  inputs.context_tokens = 256;
  auto fit = FitKvBlocks(*ParseKvMemoryBudget("1MiB"), D64(TensorType::kF16), inputs);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_EQ(fit->num_blocks, 32);
  EXPECT_EQ(fit->num_tokens, 512);
  EXPECT_EQ(fit->bytes_used, 1u << 20);
  // q4_0: 576 B per token, 9216 B per block: 113 blocks in 1 MiB.
  fit = FitKvBlocks(*ParseKvMemoryBudget("1MiB"), D64(TensorType::kQ4_0), inputs);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->num_blocks, 113);
  EXPECT_EQ(fit->bytes_used, 113u * 9216);
}

TEST(KvMemoryFitTest, FractionOfWhatWeightsLeave) {
  KvFitInputs inputs;
  inputs.available_bytes = 10ull << 20;
  inputs.weights_bytes = 2ull << 20;
  inputs.context_tokens = 16;
  auto fit = FitKvBlocks(*ParseKvMemoryBudget("0.5"), D64(TensorType::kF16), inputs);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->budget_bytes, 4ull << 20);
  EXPECT_EQ(fit->num_blocks, 128);
}

TEST(KvMemoryFitTest, BlockIdsStayInt32) {
  KvFitInputs inputs;
  inputs.context_tokens = 16;
  inputs.max_blocks = 1000;
  auto fit = FitKvBlocks(*ParseKvMemoryBudget("1T"), D64(TensorType::kQ4_0), inputs);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->num_blocks, 1000);
}

TEST(KvMemoryFitTest, TooSmallForOneSequence) {
  KvFitInputs inputs;
  inputs.context_tokens = 4096;
  Status s = FitKvBlocks(*ParseKvMemoryBudget("1MiB"), D64(TensorType::kF16), inputs).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "KV memory budget 1MiB (1.00 MiB) holds 32 blocks of 16 tokens at 2048 bytes per "
            "token (f16), but one sequence's context of 4096 tokens needs 256 blocks (8.00 MiB); "
            "raise --kv-memory, lower the context length or use a smaller --kv-type");
}

TEST(KvMemoryFitTest, NothingLeftAfterWeights) {
  KvFitInputs inputs;
  inputs.available_bytes = 1ull << 30;
  inputs.weights_bytes = 2ull << 30;
  inputs.context_tokens = 16;
  Status s = FitKvBlocks(*ParseKvMemoryBudget("0.5"), D64(TensorType::kF16), inputs).status();
  EXPECT_EQ(s.message(),
            "--kv-memory 0.5 asks for a share of the memory left after the weights, but none is "
            "left (available 1.00 GiB, weights 2.00 GiB); give the KV cache an absolute size "
            "instead (e.g. --kv-memory 256MiB)");
}

TEST(MemAvailableTest, ParsesProcMeminfo) {
  const std::string meminfo =
      "MemTotal:       32768000 kB\nMemFree:         1000000 kB\nMemAvailable:   24141700 kB\n";
  EXPECT_EQ(*ParseMemAvailable(meminfo), 24141700ull * 1024);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 1 kB\n").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(ReadMemAvailable().ok());  // this is Linux
}

TEST(FormatBytesTest, Units) {
  EXPECT_EQ(FormatBytes(768), "768 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(512ull << 20), "512.0 MiB");
  EXPECT_EQ(FormatBytes(3ull << 29), "1.50 GiB");
}

}  // namespace
}  // namespace kvmesh
