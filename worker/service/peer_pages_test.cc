#include "worker/service/peer_pages.h"

#include <gtest/gtest.h>

namespace kvmesh {
namespace {

TEST(PeerFetchSavedSecondsTest, PricesAtTheWorkersOwnSpeedWhenItHasOne) {
  // 1,000 tokens at 2,000 tokens/s: 0.5 s to compute, fetched in 0.1 s.
  EXPECT_DOUBLE_EQ(PeerFetchSavedSeconds(1000, 0.1, 2000, 10000), 0.4);
}

TEST(PeerFetchSavedSecondsTest, PricesAtTheHoldersSpeedUntilThisWorkerHasPrefilled) {
  // A decode worker has no prefill speed of its own: the holder's stands in.
  EXPECT_DOUBLE_EQ(PeerFetchSavedSeconds(1000, 0.1, 0, 4000), 0.15);
}

TEST(PeerFetchSavedSecondsTest, NothingKnownSavesNothingAndASlowFetchCostsTime) {
  EXPECT_EQ(PeerFetchSavedSeconds(1000, 0.1, 0, 0), 0);
  EXPECT_LT(PeerFetchSavedSeconds(1000, 1.0, 2000, 0), 0);  // the caller counts only gains
}

}  // namespace
}  // namespace kvmesh
