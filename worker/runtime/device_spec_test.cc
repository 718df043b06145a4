#include "worker/runtime/device_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

TEST(DeviceSpecTest, ParsesDevicesAndCoreLists) {
  auto devices = ParseDeviceList("cpu:0@0-3,cpu:1@4,6-7, cuda:2");
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].kind, DeviceKind::kCpu);
  EXPECT_EQ((*devices)[0].index, 0);
  EXPECT_EQ((*devices)[0].cores, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*devices)[1].cores, (std::vector<int>{4, 6, 7}));
  EXPECT_EQ((*devices)[1].ToString(), "cpu:1@4,6-7");
  EXPECT_EQ((*devices)[2].kind, DeviceKind::kCuda);
  EXPECT_EQ((*devices)[2].Name(), "cuda:2");
  EXPECT_TRUE((*devices)[2].cores.empty());
}

TEST(DeviceSpecTest, VirtualCudaDevicesShareOneGpu) {
  auto devices = ParseDeviceList("cuda:0.0,cuda:0.1");
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].index, 0);
  EXPECT_EQ((*devices)[1].index, 0);
  EXPECT_EQ((*devices)[0].virtual_index, 0);
  EXPECT_EQ((*devices)[1].virtual_index, 1);
  EXPECT_EQ((*devices)[1].Name(), "cuda:0.1");
  EXPECT_EQ(ParseDeviceList("cuda:1")->front().virtual_index, -1);
}

TEST(DeviceSpecTest, PlainListWithoutCores) {
  auto devices = ParseDeviceList("cpu:0,cpu:1");
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].ToString(), "cpu:1");
}

TEST(DeviceSpecTest, ErrorsNameTheEntry) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"gpu:0", "unknown device kind 'gpu'"},
      {"cpu0", "no ':'"},
      {"cpu:x", "bad device index 'x'"},
      {"cpu:0,cpu:0", "device named twice"},
      {"cpu:0@3-1", "bad core range '3-1'"},
      {"cpu:0@0-3,cpu:1@3-4", "core 3 is given to two devices"},
      {"cpu:0@1,1", "a core is listed twice"},
      {"cuda:0@0-3", "only CPU devices take a core list"},
      {"cpu:0,,cpu:1", "empty entry"},
      {"cpu:0,3", "a core list needs '@'"},
      {"cpu:0.1", "only CUDA devices can be virtual"},
      {"cuda:0.x", "bad virtual device index 'x'"},
      {"cuda:0.1,cuda:0.1", "device named twice"},
      {"cuda:0,cuda:0.1", "GPU 0 is given whole and as virtual devices"},
  };
  for (const Case& c : cases) {
    auto devices = ParseDeviceList(c.text);
    ASSERT_FALSE(devices.ok()) << c.text;
    EXPECT_THAT(devices.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(DeviceSpecTest, FormatsCoreRanges) {
  EXPECT_EQ(FormatCoreList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(FormatCoreList({4}), "4");
}

}  // namespace
}  // namespace kvmesh
