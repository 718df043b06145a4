#include "common/block_hash.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kvmesh {
namespace {

std::vector<int32_t> Tokens(int n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), 1);
  return t;
}

// Pinned values, computed independently (Python hashlib) from the definition
// in block_hash.h. Changing them invalidates every router's index and every
// persisted hash: bump the "v1" tags instead.
TEST(BlockHashTest, PinnedValues) {
  const BlockHash root = RootHash("sha256:abc");
  EXPECT_EQ(root.Hex(), "26e3d7381336ca54925288f0df93d81d");
  EXPECT_EQ(RootHash("sha256:abc", "tenant-a").Hex(), "bb58c2678bddfb347cd77719eba8f77b");
  const auto hashes = HashFullBlocks(root, Tokens(32), 16);
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0].Hex(), "2fbf0ea4673ac6b3e26b2213f3b1f2b1");
  EXPECT_EQ(hashes[1].Hex(), "483161e6127f7fdc855902ed663cfbe0");
  EXPECT_EQ(HashFullBlocks(RootHash("sha256:abc", "tenant-a"), Tokens(16), 16)[0].Hex(),
            "5005a3e638b3dbdee2165071aeb24e9d");
}

TEST(BlockHashTest, OnlyFullBlocksAndChaining) {
  const BlockHash root = RootHash("m");
  EXPECT_EQ(HashFullBlocks(root, Tokens(15), 16).size(), 0u);
  EXPECT_EQ(HashFullBlocks(root, Tokens(47), 16).size(), 2u);
  // Same second block after a different first block: different hash.
  std::vector<int32_t> a = Tokens(32), b = Tokens(32);
  b[0] = 999;
  const auto ha = HashFullBlocks(root, a, 16), hb = HashFullBlocks(root, b, 16);
  EXPECT_NE(ha[1], hb[1]);
  // Prefix property: the hashes of a prefix are a prefix of the hashes.
  const auto longer = HashFullBlocks(root, Tokens(64), 16);
  EXPECT_EQ(longer[0], ha[0]);
  EXPECT_EQ(longer[1], ha[1]);
}

TEST(BlockHashTest, SaltsModelsAndBlockSizesSeparate) {
  const auto t = Tokens(16);
  EXPECT_NE(HashFullBlocks(RootHash("m"), t, 16)[0], HashFullBlocks(RootHash("m", "x"), t, 16)[0]);
  EXPECT_NE(HashFullBlocks(RootHash("m1"), t, 16)[0], HashFullBlocks(RootHash("m2"), t, 16)[0]);
  EXPECT_NE(HashFullBlocks(RootHash("m"), t, 16)[0], HashFullBlocks(RootHash("m"), t, 8)[1]);
  // Identity and salt cannot be shifted into each other.
  EXPECT_NE(RootHash("ab", "c"), RootHash("a", "bc"));
}

TEST(BlockHashTest, BytesRoundTrip) {
  const BlockHash h = RootHash("m");
  BlockHash back;
  ASSERT_TRUE(BlockHash::FromBytes(h.AsBytes(), &back));
  EXPECT_EQ(back, h);
  EXPECT_FALSE(BlockHash::FromBytes("short", &back));
}

}  // namespace
}  // namespace kvmesh
