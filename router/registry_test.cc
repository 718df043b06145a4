// The Registry with fake clients: membership from DNS and self-registration,
// health flaps, and what each does to the routing set and the prefix index.
#include "router/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "router/registry_harness.h"

namespace kvmesh::router {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> Members(Registry& registry) {
  std::vector<std::string> out;
  for (const auto& w : registry.AllConnections()) out.push_back(w->address());
  std::sort(out.begin(), out.end());
  return out;
}

// Polls `fn` until it is true or 10 s pass.
template <typename Fn>
bool Eventually(Fn fn) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fn()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

std::vector<std::string> Healthy(Registry& registry) {
  std::vector<std::string> out;
  auto snap = registry.Snapshot("tiny");
  if (!snap.ok()) return out;
  for (const Candidate& c : snap->healthy()) out.push_back(c.worker->address());
  std::sort(out.begin(), out.end());
  return out;
}

// Every request takes a snapshot. While the workers and their health stay
// the same, snapshots share one immutable list instead of copying it; any
// change of health (seen by the flag itself, whether or not the listener
// heard of it) or of membership gives a new list, and a list already handed
// out never changes.
TEST(RegistryTest, SnapshotsShareOneListUntilTheWorkersOrTheirHealthChange) {
  RegistryHarness harness;
  Registry& registry = harness.registry();
  registry.SetStaticWorkers({"a", "b", "c"});
  for (const char* w : {"a", "b", "c"}) harness.Connect(w, RegistryHarness::ModelInfo(w));
  auto first = registry.Snapshot("tiny");
  auto second = registry.Snapshot("tiny");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->candidates.get(), second->candidates.get());
  EXPECT_EQ(first->healthy().size(), 3u);

  harness.worker("b")->set_healthy(false);  // the registry was not told
  auto without_b = registry.Snapshot("tiny");
  ASSERT_TRUE(without_b.ok());
  EXPECT_NE(without_b->candidates.get(), first->candidates.get());
  EXPECT_EQ(Healthy(registry), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(first->healthy().size(), 3u);  // what was handed out stays as it was

  harness.SetHealthy("b", true);
  EXPECT_EQ(Healthy(registry), (std::vector<std::string>{"a", "b", "c"}));

  registry.SetStaticWorkers({"a", "b"});
  EXPECT_EQ(Healthy(registry), (std::vector<std::string>{"a", "b"}));
  // c's client lives while a snapshot from before holds it, and no longer.
  EXPECT_EQ(harness.freed("c"), 0);
  first = InternalError("released");
  second = InternalError("released");
  without_b = InternalError("released");
  EXPECT_EQ(harness.freed("c"), 1);
}

TEST(RegistryTest, DnsAnswersAddAndRemoveMembersAndAFailedLookupKeepsThem) {
  std::mutex mu;
  StatusOr<std::vector<std::string>> answer =
      std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"};
  std::vector<std::string> asked;
  RegistryOptions options;
  options.dns_refresh = milliseconds(20);
  options.resolve = [&](const std::string& host, const std::string& port) {
    std::lock_guard<std::mutex> lock(mu);
    asked.push_back(host + " " + port);
    return answer;
  };
  RegistryHarness harness(options);
  Registry& registry = harness.registry();
  ASSERT_TRUE(registry.StartDns("workers.ns.svc:7000").ok());
  ASSERT_TRUE(Eventually([&] { return Members(registry).size() == 2; }));
  EXPECT_EQ(Members(registry), (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"}));
  EXPECT_TRUE(harness.worker("10.0.0.1:7000")->started());
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(asked.front(), "workers.ns.svc 7000");
  }
  harness.Connect("10.0.0.1:7000", RegistryHarness::ModelInfo("w1"));
  harness.Connect("10.0.0.2:7000", RegistryHarness::ModelInfo("w2"));

  // A pod goes and another comes: the gone one is stopped and leaves the
  // routing set.
  {
    std::lock_guard<std::mutex> lock(mu);
    answer = std::vector<std::string>{"10.0.0.2:7000", "10.0.0.3:7000"};
  }
  ASSERT_TRUE(Eventually([&] {
    return Members(registry) == std::vector<std::string>{"10.0.0.2:7000", "10.0.0.3:7000"};
  }));
  // Stopped, and nothing holds it: the refresh thread releases the client
  // after it leaves the members (outside the registry's lock), so a moment
  // later.
  EXPECT_TRUE(Eventually([&] { return harness.freed("10.0.0.1:7000") == 1; }));
  EXPECT_EQ(Healthy(registry), std::vector<std::string>{"10.0.0.2:7000"});
  harness.Connect("10.0.0.3:7000", RegistryHarness::ModelInfo("w3"));
  EXPECT_EQ(Healthy(registry), (std::vector<std::string>{"10.0.0.2:7000", "10.0.0.3:7000"}));

  // The resolver fails (DNS down): the members stay as they were.
  size_t asked_before;
  {
    std::lock_guard<std::mutex> lock(mu);
    answer = UnavailableError("DNS lookup of workers.ns.svc failed: temporary failure");
    asked_before = asked.size();
  }
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return asked.size() >= asked_before + 3;
  }));
  EXPECT_EQ(Members(registry), (std::vector<std::string>{"10.0.0.2:7000", "10.0.0.3:7000"}));
  EXPECT_EQ(harness.made("10.0.0.2:7000"), 1);  // never recreated
}

TEST(RegistryTest, ABadDnsSourceIsAClearError) {
  RegistryHarness harness;
  const Status s = harness.registry().StartDns("workers-without-port");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must be NAME:PORT"), std::string::npos) << s.message();
}

TEST(RegistryTest, AHealthFlapLeavesTheRoutingSetAndForgetsTheWorkersBlocks) {
  RegistryHarness harness;
  Registry& registry = harness.registry();
  registry.SetStaticWorkers({"a", "b"});
  harness.Connect("a", RegistryHarness::ModelInfo("a"));
  harness.Connect("b", RegistryHarness::ModelInfo("b"));
  const std::vector<int32_t> tokens(48, 7);
  const std::vector<BlockHash> hashes = HashFullBlocks(RootHash("sha256:test"), tokens, 16);
  harness.Stored("a", hashes);
  EXPECT_EQ(registry.IndexedBlocks()["a"], 3);

  for (int flap = 0; flap < 3; ++flap) {
    harness.SetHealthy("a", false);
    EXPECT_EQ(Healthy(registry), std::vector<std::string>{"b"});
    EXPECT_EQ(registry.IndexedBlocks()["a"], 0);  // its entries went with it
    harness.SetHealthy("a", true);
    EXPECT_EQ(Healthy(registry), (std::vector<std::string>{"a", "b"}));
    // Back, with what its fresh snapshot says.
    harness.Stored("a", hashes);
    EXPECT_EQ(registry.IndexedBlocks()["a"], 3);
  }
  EXPECT_EQ(harness.made("a"), 1);  // the same client throughout
  EXPECT_TRUE(registry.AnyHealthy());
  harness.SetHealthy("a", false);
  harness.SetHealthy("b", false);
  EXPECT_FALSE(registry.AnyHealthy());
}

TEST(RegistryTest, AWorkerWithAnotherDigestOfTheSameModelIsNotRouted) {
  RegistryHarness harness;
  Registry& registry = harness.registry();
  registry.SetStaticWorkers({"a", "b"});
  harness.Connect("a", RegistryHarness::ModelInfo("a"));
  v1::InfoResponse other = RegistryHarness::ModelInfo("b");
  other.set_model_digest("sha256:other");
  harness.Connect("b", other);
  EXPECT_EQ(Healthy(registry), std::vector<std::string>{"a"});
}

TEST(RegistryTest, ASelfRegisteredWorkerExpiresWithoutHeartbeatsAndDeregistersAtOnce) {
  RegistryHarness harness;
  Registry& registry = harness.registry();
  registry.Heartbeat("x:1", std::chrono::seconds(1));
  registry.Heartbeat("y:1", std::chrono::seconds(60));
  EXPECT_EQ(Members(registry), (std::vector<std::string>{"x:1", "y:1"}));
  // x's heartbeat lapses (the maintenance thread checks every second).
  ASSERT_TRUE(Eventually([&] { return Members(registry) == std::vector<std::string>{"y:1"}; }));
  // The maintenance thread stops and releases the client after it leaves the
  // members (outside the registry's lock).
  EXPECT_TRUE(Eventually([&] { return harness.freed("x:1") == 1; }));
  registry.Deregister("y:1");
  EXPECT_TRUE(Members(registry).empty());
  EXPECT_EQ(harness.freed("y:1"), 1);
  // A worker may come back; it gets a new client.
  registry.Heartbeat("y:1", std::chrono::seconds(60));
  EXPECT_EQ(harness.made("y:1"), 2);
}

TEST(RegistryTest, AnUnknownModelNameIsAClearErrorWithStrictNames) {
  RegistryOptions options;
  options.strict_model_names = true;
  RegistryHarness harness(options);
  harness.registry().SetStaticWorkers({"a"});
  harness.Connect("a", RegistryHarness::ModelInfo("a"));
  EXPECT_TRUE(harness.registry().Snapshot("tiny").ok());
  auto snap = harness.registry().Snapshot("no-such-model");
  ASSERT_FALSE(snap.ok());
  EXPECT_NE(snap.status().message().find("no-such-model"), std::string::npos)
      << snap.status().message();
}

}  // namespace
}  // namespace kvmesh::router
