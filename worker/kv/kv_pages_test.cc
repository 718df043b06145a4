// Pages between two workers' caches: what one exports by hash, the other
// checks against its own prompt and imports as cached device blocks, byte
// for byte; forged, foreign-salt and short pages are refused.
#include "worker/kv/kv_pages.h"

#include <gtest/gtest.h>

#include <numeric>

#include "worker/kv/kv_cache_manager.h"

namespace kvmesh {
namespace {

constexpr int kBs = 4;
constexpr size_t kBytes = 12;

// Device blocks in plain memory.
class MemoryBlocks final : public KvBlockCopier {
 public:
  explicit MemoryBlocks(int32_t blocks) : mem_(static_cast<size_t>(blocks) * kBytes) {}
  Status ToHost(int32_t block, std::span<uint8_t> host) override {
    std::copy_n(mem_.begin() + block * kBytes, kBytes, host.begin());
    return Status::Ok();
  }
  Status FromHost(std::span<const uint8_t> host, int32_t block) override {
    if (fail_writes) return InternalError("injected");
    std::copy(host.begin(), host.end(), mem_.begin() + block * kBytes);
    return Status::Ok();
  }
  std::span<uint8_t> Block(int32_t block) { return {mem_.data() + block * kBytes, kBytes}; }
  bool fail_writes = false;

 private:
  std::vector<uint8_t> mem_;
};

std::vector<int32_t> Tokens(int n, int first = 10) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// One worker's cache and device memory.
struct Side {
  explicit Side(int32_t blocks) : kv(blocks, kBs), dev(blocks) { kv.SetCopier(&dev, kBytes); }

  // Computes `prompt` (each block's bytes a function of its tokens), then
  // releases it so its full blocks stay cached.
  void Compute(const BlockHash& root, const std::vector<int32_t>& prompt) {
    SequenceBlocks seq;
    seq.root = root;
    const CachedPrefix none;
    ASSERT_TRUE(kv.AllocateSlots(&seq, static_cast<int32_t>(prompt.size()), &none));
    for (size_t i = 0; i < seq.table.size(); ++i) {
      for (size_t b = 0; b < kBytes; ++b) {  // the bytes of block i's tokens
        const size_t t = std::min(i * kBs + b % kBs, prompt.size() - 1);
        dev.Block(seq.table[i])[b] = static_cast<uint8_t>(prompt[t] + b);
      }
    }
    kv.CommitComputed(&seq, prompt, static_cast<int32_t>(prompt.size()));
    kv.Release(&seq);
  }

  // Device bytes of the cached prefix a sequence of `prompt` would get.
  std::vector<std::vector<uint8_t>> PrefixBytes(const BlockHash& root,
                                                const std::vector<int32_t>& prompt) {
    SequenceBlocks seq;
    seq.root = root;
    const CachedPrefix prefix = kv.FindCachedPrefix(&seq, prompt);
    std::vector<std::vector<uint8_t>> out;
    for (int32_t b : prefix.blocks) {
      auto bytes = dev.Block(b);
      out.emplace_back(bytes.begin(), bytes.end());
    }
    return out;
  }

  KvCacheManager kv;
  MemoryBlocks dev;
};

TEST(KvPagesTest, PagesExportedByHashImportAsTheSameCachedBlocks) {
  const BlockHash root = RootHash("m", "tenant");
  const auto prompt = Tokens(19);  // 4 full blocks
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16), asker(16);
  holder.Compute(root, prompt);

  const std::vector<KvPage> pages = holder.kv.ExportPages(hashes, 1 << 20);
  ASSERT_EQ(pages.size(), 4u);
  EXPECT_EQ(holder.kv.stats().exported_blocks, 4);
  const PageCheck check = CheckPeerPages(pages, hashes, prompt, 0, kBs, kBytes);
  EXPECT_EQ(check.accepted, 4);
  EXPECT_EQ(check.rejected, "");

  EXPECT_EQ(asker.kv.ImportPages(hashes, prompt, 0, pages), 4);
  EXPECT_EQ(asker.kv.stats().imported_blocks, 4);
  EXPECT_EQ(asker.kv.pool().num_free(), 16);  // cached, not held
  EXPECT_EQ(asker.PrefixBytes(root, prompt), holder.PrefixBytes(root, prompt));
  EXPECT_EQ(asker.PrefixBytes(root, prompt).size(), 4u);
  // Importing them again changes nothing.
  EXPECT_EQ(asker.kv.ImportPages(hashes, prompt, 0, pages), 4);
  EXPECT_EQ(asker.kv.stats().imported_blocks, 4);
}

TEST(KvPagesTest, ExportStopsAtTheFirstMissingHashAndAtTheByteLimit) {
  const BlockHash root = RootHash("m");
  const auto prompt = Tokens(16);
  Side holder(16);
  holder.Compute(root, Tokens(9));  // blocks 0 and 1 of prompt
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  EXPECT_EQ(holder.kv.ExportPages(hashes, 1 << 20).size(), 2u);
  EXPECT_EQ(holder.kv.ExportPages(hashes, kBytes).size(), 1u);
  EXPECT_EQ(holder.kv.ExportPages(std::span(hashes).subspan(2), 1 << 20).size(), 0u);
}

TEST(KvPagesTest, ImportStartsMidChainAfterTheAskersOwnBlocks) {
  const BlockHash root = RootHash("m");
  const auto prompt = Tokens(17);
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16), asker(16);
  holder.Compute(root, prompt);
  asker.Compute(root, Tokens(9));  // the asker holds blocks 0 and 1
  const auto pages = holder.kv.ExportPages(std::span(hashes).subspan(2), 1 << 20);
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(CheckPeerPages(pages, hashes, prompt, 2, kBs, kBytes).accepted, 2);
  EXPECT_EQ(asker.kv.ImportPages(hashes, prompt, 2, pages), 2);
  EXPECT_EQ(asker.PrefixBytes(root, prompt), holder.PrefixBytes(root, prompt));
}

TEST(KvPagesTest, ForgedForeignAndMisfitPagesAreRejected) {
  const BlockHash root = RootHash("m", "a");
  const auto prompt = Tokens(17);
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16);
  holder.Compute(root, prompt);
  const auto pages = holder.kv.ExportPages(hashes, 1 << 20);
  ASSERT_EQ(pages.size(), 4u);

  // A forged page: the right hash over other tokens (as a colliding hash
  // would be). Acceptance stops there.
  auto forged = pages;
  forged[2].tokens[1] += 1;
  PageCheck check = CheckPeerPages(forged, hashes, prompt, 0, kBs, kBytes);
  EXPECT_EQ(check.accepted, 2);
  EXPECT_NE(check.rejected.find("other tokens"), std::string::npos) << check.rejected;

  // Another tenant's salt hashes the same tokens differently: nothing fits.
  const auto other = HashFullBlocks(RootHash("m", "b"), prompt, kBs);
  check = CheckPeerPages(pages, other, prompt, 0, kBs, kBytes);
  EXPECT_EQ(check.accepted, 0);
  EXPECT_NE(check.rejected.find("expected"), std::string::npos) << check.rejected;
  // And a holder asked for tenant b's hashes has none.
  EXPECT_EQ(holder.kv.ExportPages(other, 1 << 20).size(), 0u);

  // Pages of another layout (size) or claimed for the wrong blocks.
  check = CheckPeerPages(pages, hashes, prompt, 0, kBs, kBytes + 1);
  EXPECT_EQ(check.accepted, 0);
  EXPECT_NE(check.rejected.find("bytes"), std::string::npos) << check.rejected;
  EXPECT_EQ(CheckPeerPages(pages, hashes, prompt, 1, kBs, kBytes).accepted, 0);
  check = CheckPeerPages(pages, hashes, std::span(prompt).first(9), 0, kBs, kBytes);
  EXPECT_EQ(check.accepted, 2);
  EXPECT_NE(check.rejected.find("past the prompt"), std::string::npos) << check.rejected;
}

TEST(KvPagesTest, ImportStopsWhenNoBlockIsFreeOrACopyFails) {
  const BlockHash root = RootHash("m");
  const auto prompt = Tokens(17);
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16);
  holder.Compute(root, prompt);
  const auto pages = holder.kv.ExportPages(hashes, 1 << 20);

  Side small(6);
  SequenceBlocks busy;  // holds 4 of the 6 blocks
  busy.root = RootHash("other");
  ASSERT_TRUE(small.kv.AllocateSlots(&busy, 16));
  EXPECT_EQ(small.kv.ImportPages(hashes, prompt, 0, pages), 2);
  small.kv.Release(&busy);

  Side failing(16);
  failing.dev.fail_writes = true;
  EXPECT_EQ(failing.kv.ImportPages(hashes, prompt, 0, pages), 0);
  EXPECT_EQ(failing.kv.pool().num_free_cached(), 0);
  EXPECT_EQ(failing.kv.stats().failed_copies, 1);
}

// The asker's own prefix before the pages is held while the pages take
// blocks, so under pressure the import cannot evict what the pages attach
// to.
TEST(KvPagesTest, ImportKeepsTheAskersPrefixItAttachesTo) {
  const BlockHash root = RootHash("m");
  const auto prompt = Tokens(17);
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16), asker(4);
  holder.Compute(root, prompt);
  asker.Compute(root, Tokens(9));                    // blocks 0 and 1 of the prompt
  asker.Compute(RootHash("other"), Tokens(8, 900));  // more recent: the prompt's are the oldest
  const auto pages = holder.kv.ExportPages(std::span(hashes).subspan(2), 1 << 20);
  ASSERT_EQ(pages.size(), 2u);
  // Two blocks are needed. The least recent are the prompt's own blocks 0
  // and 1, which must stay: the other prompt's blocks are taken.
  EXPECT_EQ(asker.kv.ImportPages(hashes, prompt, 2, pages), 2);
  EXPECT_EQ(asker.PrefixBytes(root, prompt).size(), 4u);
  EXPECT_EQ(asker.PrefixBytes(root, prompt), holder.PrefixBytes(root, prompt));
}

// A page the asker holds in its host tier goes to the device as well (and
// leaves the host tier), so the prefix is device blocks first and the pages
// after it are reachable.
TEST(KvPagesTest, APageInTheHostTierMovesToTheDevice) {
  const BlockHash root = RootHash("m");
  const auto prompt = Tokens(17);
  const auto hashes = HashFullBlocks(root, prompt, kBs);
  Side holder(16);
  holder.Compute(root, prompt);
  const auto pages = holder.kv.ExportPages(hashes, 1 << 20);
  ASSERT_EQ(pages.size(), 4u);

  Side asker(4);
  asker.kv.EnableHostTier(16 * kBytes, kBytes, &asker.dev);
  asker.Compute(root, Tokens(9));  // blocks 0 and 1
  SequenceBlocks other;            // pushes them to the host tier
  other.root = RootHash("other");
  ASSERT_TRUE(asker.kv.AllocateSlots(&other, 16));
  asker.kv.Release(&other);
  ASSERT_GE(asker.kv.host_tier()->size(), 2);
  EXPECT_EQ(asker.kv.ImportPages(hashes, prompt, 0, pages), 4);
  SequenceBlocks seq;
  seq.root = root;
  const CachedPrefix prefix = asker.kv.FindCachedPrefix(&seq, prompt);
  EXPECT_EQ(prefix.blocks.size(), 4u);  // all on the device
  EXPECT_TRUE(prefix.host_slots.empty());
  EXPECT_FALSE(asker.kv.host_tier()->Find(hashes[0], std::span(prompt).first(kBs)));
}

}  // namespace
}  // namespace kvmesh
