#include "worker/kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace kvmesh::kernels {
namespace {

TEST(CpuFeaturesTest, NamesRoundTrip) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(ParseIsa(IsaName(isa)), isa);
  }
  EXPECT_EQ(IsaName(Isa::kAvx512), "avx512");
  EXPECT_EQ(ParseIsa("sse2"), std::nullopt);
  EXPECT_EQ(ParseIsa(""), std::nullopt);
}

TEST(CpuFeaturesTest, ActiveTierIsSupportedAndScalarAlwaysIs) {
  std::printf("[ cpu ] host tier %s, active tier %s, avx512_bf16 %d, amx %d\n",
              std::string(IsaName(HostIsa())).c_str(), std::string(IsaName(ActiveIsa())).c_str(),
              HasAvx512Bf16(), HasAmx());
  EXPECT_TRUE(IsaSupported(Isa::kScalar));
  EXPECT_TRUE(IsaSupported(HostIsa()));
  EXPECT_LE(static_cast<int>(ActiveIsa()), static_cast<int>(HostIsa()));
  if (HasAvx512Bf16() || HasAmx()) {
    EXPECT_EQ(HostIsa(), Isa::kAvx512);
  }
}

}  // namespace
}  // namespace kvmesh::kernels
