// RouterCore against fake workers (router/fake_worker_client.h): retries,
// errors after the first token, cancellation, deadlines, and the lifetime of
// a worker's client while its streams run, and disaggregated prefill. No
// processes, no network.
#include "router/router_core.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "router/registry_harness.h"

namespace kvmesh::router {
namespace {

using std::chrono::milliseconds;

v1::LoadResponse Running(uint32_t n) {
  v1::LoadResponse load;
  load.set_running(n);
  return load;
}

v1::GenerateTextRequest Prompt(int n_tokens = 40) {
  v1::GenerateTextRequest req;
  for (int i = 0; i < n_tokens; ++i) req.add_prompt_tokens(10 + i % 200);
  req.mutable_options()->set_max_tokens(8);
  return req;
}

// A worker whose every call fails at once, before any message.
std::function<void(const std::shared_ptr<FakeCall>&)> FailsWith(grpc::StatusCode code,
                                                                const std::string& message) {
  return [code, message](const std::shared_ptr<FakeCall>& call) {
    call->Finish(grpc::Status(code, message));
  };
}

struct Reply {
  Status status;
  std::vector<v1::GenerateTextResponse> messages;
};

Reply Send(RouterCore& core, const v1::GenerateTextRequest& req,
           std::function<bool(const v1::GenerateTextResponse&)> accept = {}) {
  Reply r;
  r.status = core.Generate(req, [&](const v1::GenerateTextResponse& m) {
    r.messages.push_back(m);
    return accept ? accept(m) : true;
  });
  return r;
}

class RouterCoreTest : public ::testing::Test {
 protected:
  // Workers "a" and "b" of model tiny; "b" reports more load, so a
  // least-load choice takes "a" first.
  void SetUp() override {
    harness_.registry().SetStaticWorkers({"a", "b"});
    harness_.Connect("a", RegistryHarness::ModelInfo("a"));
    harness_.Connect("b", RegistryHarness::ModelInfo("b"));
    a_ = harness_.worker("a");
    b_ = harness_.worker("b");
    b_->set_load(Running(5));
  }
  std::unique_ptr<RouterCore> Core(RouterCoreOptions options = {}) {
    return std::make_unique<RouterCore>(&harness_.registry(), MakeLeastLoadPolicy(), nullptr,
                                        options);
  }

  RegistryHarness harness_;
  std::shared_ptr<FakeWorkerClient> a_, b_;
};

TEST_F(RouterCoreTest, RetriesAnotherWorkerWhenTheFirstFailsBeforeAnyToken) {
  a_->set_on_generate(FailsWith(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  auto core = Core();
  const Reply r = Send(*core, Prompt());
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(a_->calls().size(), 1u);
  ASSERT_EQ(b_->calls().size(), 1u);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].worker(), "b");
  EXPECT_EQ(r.messages[0].tokens_size(), 1);
  // Unreachable: out of the routing set until it answers a poll again.
  EXPECT_EQ(a_->failures_reported(), 1);
  EXPECT_FALSE(a_->healthy());
  // Both attempts carried the same request.
  EXPECT_EQ(a_->calls()[0]->request().request_id(), b_->calls()[0]->request().request_id());
  EXPECT_EQ(b_->calls()[0]->request().prompt_tokens_size(), 40);
}

TEST_F(RouterCoreTest, AnOverloadedWorkerIsRetriedElsewhereAndStaysHealthy) {
  a_->set_on_generate(FailsWith(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full"));
  auto core = Core();
  const Reply r = Send(*core, Prompt());
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(b_->calls().size(), 1u);
  EXPECT_EQ(a_->failures_reported(), 0);
  EXPECT_TRUE(a_->healthy());
}

TEST_F(RouterCoreTest, WhenEveryWorkerFailsTheLastErrorNamesItsWorker) {
  for (const auto& w : {a_, b_}) {
    w->set_on_generate(FailsWith(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  }
  RouterCoreOptions options;
  options.max_attempts = 5;
  auto core = Core(options);
  const Reply r = Send(*core, Prompt());
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status.message().find("worker b"), std::string::npos) << r.status.message();
  // Each worker once: a tried worker is not tried again for the request.
  EXPECT_EQ(a_->calls().size(), 1u);
  EXPECT_EQ(b_->calls().size(), 1u);
  EXPECT_TRUE(r.messages.empty());
}

TEST_F(RouterCoreTest, AFailureAfterTheFirstTokenEndsTheStreamWithAClearError) {
  a_->set_on_generate([](const std::shared_ptr<FakeCall>& call) {
    call->SendTokens({5, 6}, "ab");
    call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "socket closed"));
  });
  auto core = Core();
  const Reply r = Send(*core, Prompt());
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status.message().find("worker a failed after 2 tokens: socket closed"),
            std::string::npos)
      << r.status.message();
  // Not retried: the client has seen text.
  EXPECT_TRUE(b_->calls().empty());
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].text(), "ab");
}

TEST_F(RouterCoreTest, ANonRetryableErrorIsTheClientsAndIsNotRetried) {
  a_->set_on_generate(FailsWith(grpc::StatusCode::INVALID_ARGUMENT, "grammar: unknown rule x"));
  auto core = Core();
  const Reply r = Send(*core, Prompt());
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status.message(), "grammar: unknown rule x");
  EXPECT_TRUE(b_->calls().empty());
  EXPECT_TRUE(a_->healthy());
}

TEST_F(RouterCoreTest, AClientThatStopsReadingCancelsTheWorkersCall) {
  std::shared_ptr<FakeCall> held;
  a_->set_on_generate([&](const std::shared_ptr<FakeCall>& call) {
    held = call;
    call->SendTokens({5}, "a");  // and the call stays open
  });
  auto core = Core();
  const Reply r = Send(*core, Prompt(), [](const v1::GenerateTextResponse&) { return false; });
  EXPECT_EQ(r.status.code(), StatusCode::kCancelled);
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->cancelled());
  EXPECT_EQ(a_->inflight.load(), 0);
}

// A hung worker (SIGSTOP in bench/fault_drill.sh) holds a request that has
// shown the client nothing: it is cancelled there and served elsewhere.
TEST_F(RouterCoreTest, AWorkerThatMakesNoProgressBeforeAnyTokenIsLeftForAnother) {
  std::shared_ptr<FakeCall> held;
  a_->set_on_generate([&](const std::shared_ptr<FakeCall>& call) { held = call; });
  RouterCoreOptions options;
  options.request_timeout = milliseconds(100);
  auto core = Core(options);
  const auto t0 = std::chrono::steady_clock::now();
  const Reply r = Send(*core, Prompt());
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].worker(), "b");
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->cancelled());
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(a_->failures_reported(), 1);  // out of the routing set until a poll answers
  EXPECT_FALSE(a_->healthy());
}

// After a token the client has part of an answer: a stall is an error that
// names the worker, not a retry (the answer would start over).
TEST_F(RouterCoreTest, AWorkerThatStallsAfterATokenIsCancelledAtTheDeadline) {
  std::shared_ptr<FakeCall> held;
  a_->set_on_generate([&](const std::shared_ptr<FakeCall>& call) {
    held = call;
    call->SendTokens({5}, "a");
  });
  RouterCoreOptions options;
  options.request_timeout = milliseconds(100);
  auto core = Core(options);
  const Reply r = Send(*core, Prompt());
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status.message().find("worker a made no progress"), std::string::npos)
      << r.status.message();
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->cancelled());
  EXPECT_TRUE(b_->calls().empty());
}

TEST_F(RouterCoreTest, ProgressMessagesKeepALongPrefillAliveAndAreNotRelayed) {
  std::thread worker;
  a_->set_on_generate([&worker](const std::shared_ptr<FakeCall>& call) {
    worker = std::thread([call] {
      for (int i = 0; i < 6; ++i) {  // 6 × 40 ms of prefill, over a 100 ms timeout
        std::this_thread::sleep_for(milliseconds(40));
        call->Send(v1::GenerateResponse());  // a prefill chunk: no token
      }
      call->SendTokens({7}, "z", v1::FINISH_REASON_LENGTH);
      call->Finish();
    });
  });
  RouterCoreOptions options;
  options.request_timeout = milliseconds(100);
  auto core = Core(options);
  const Reply r = Send(*core, Prompt());
  worker.join();
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  // Six progress messages (for the front doors to check on their client),
  // then the answer.
  ASSERT_EQ(r.messages.size(), 7u);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(IsProgress(r.messages[i])) << i;
  EXPECT_FALSE(IsProgress(r.messages[6]));
  EXPECT_EQ(r.messages[6].text(), "z");
  EXPECT_EQ(r.messages[6].finish_reason(), v1::FINISH_REASON_LENGTH);
}

// A worker prefilling in chunks until it is cancelled.
void PrefillsUntilCancelled(const std::shared_ptr<FakeCall>& call, std::thread* worker) {
  *worker = std::thread([call] {
    for (int i = 0; i < 500 && !call->cancelled(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
      call->Send(v1::GenerateResponse());  // a prefill chunk
    }
    call->Finish(call->cancelled() ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")
                                   : grpc::Status::OK);
  });
}

// The client leaves in the middle of a long prefill: the worker's call is
// cancelled at the next chunk, not when the first token would come.
TEST_F(RouterCoreTest, AClientGoneDuringAPrefillStopsItAtTheNextChunk) {
  std::thread worker;
  std::shared_ptr<FakeCall> held;
  a_->set_on_generate([&](const std::shared_ptr<FakeCall>& call) {
    held = call;
    PrefillsUntilCancelled(call, &worker);
  });
  auto core = Core();
  int seen = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const Reply r =
      Send(*core, Prompt(), [&](const v1::GenerateTextResponse&) { return ++seen < 3; });
  const auto took = std::chrono::steady_clock::now() - t0;
  worker.join();
  EXPECT_EQ(r.status.code(), StatusCode::kCancelled);
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->cancelled());
  EXPECT_EQ(seen, 3);                        // the third chunk found the client gone
  EXPECT_LT(took, std::chrono::seconds(3));  // 500 chunks would take 5 s
  EXPECT_TRUE(b_->calls().empty());          // and nothing was retried
}

TEST_F(RouterCoreTest, APromptBeyondTheContextIsRefusedBeforeAnyWorkerIsCalled) {
  auto core = Core();
  const Reply r = Send(*core, Prompt(512));
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("at most 511"), std::string::npos) << r.status.message();
  EXPECT_TRUE(a_->calls().empty());
  EXPECT_TRUE(b_->calls().empty());
}

TEST_F(RouterCoreTest, ThePrefixIndexSendsARepeatedPromptToItsHolder) {
  // b (the busier one) holds the prompt's first two blocks; the prefix
  // policy takes it there, and says how much it expects cached.
  const v1::GenerateTextRequest req = Prompt(170);
  const std::vector<int32_t> tokens(req.prompt_tokens().begin(), req.prompt_tokens().end());
  const std::vector<BlockHash> hashes = HashFullBlocks(RootHash("sha256:test"), tokens, 16);
  ASSERT_EQ(hashes.size(), 10u);
  harness_.Stored("b", hashes);
  b_->set_load(Running(1));
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  const Reply r = Send(core, req);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(b_->calls().size(), 1u);
  EXPECT_EQ(b_->calls()[0]->request().predicted_cached_tokens(), 160);
  EXPECT_TRUE(a_->calls().empty());
}

// The router guesses that a worker will hold what it was sent only past
// the blocks its own events confirm: each guess is an index write, and an
// agent's long prompt is mostly confirmed where it goes.
TEST_F(RouterCoreTest, GuessesOnlyPastWhatTheWorkersEventsConfirm) {
  const v1::GenerateTextRequest req = Prompt(170);
  const std::vector<int32_t> tokens(req.prompt_tokens().begin(), req.prompt_tokens().end());
  const std::vector<BlockHash> hashes = HashFullBlocks(RootHash("sha256:test"), tokens, 16);
  ASSERT_EQ(hashes.size(), 10u);
  const std::vector<BlockHash> confirmed(hashes.begin(), hashes.begin() + 6);
  harness_.Stored("b", confirmed);
  b_->set_load(Running(1));
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  ASSERT_TRUE(Send(core, req).status.ok());
  ASSERT_EQ(b_->calls().size(), 1u);
  auto snap = harness_.registry().Snapshot("tiny");
  ASSERT_TRUE(snap.ok());
  int b_slot = -1;
  WorkerSet all;
  for (const Candidate& c : snap->healthy()) {
    all.Add(c.slot);
    if (c.worker.get() == b_.get()) b_slot = c.slot;
  }
  ASSERT_GE(b_slot, 0);
  PrefixMatch match = snap->group->index.Match(hashes, all);
  EXPECT_EQ(match.blocks[b_slot], 10);  // 6 confirmed, 4 guessed
  EXPECT_EQ(match.exact_blocks[b_slot], 6);
  // Once b evicts the confirmed six, nothing of the guess is left to match
  // from the first block: the first six were never guessed.
  harness_.Removed("b", confirmed);
  match = snap->group->index.Match(hashes, all);
  EXPECT_EQ(match.blocks[b_slot], 0);
}

TEST(RouterCoreScaleTest, ALargeFleetWeighsTheHolderTheSessionAndASample) {
  // 300 workers, above twice decision_sample (8): each decision weighs the
  // prompt's holder, the session's worker and 8 drawn at random, and still
  // finds the holder and keeps the session.
  RegistryHarness harness;
  std::vector<std::string> addresses;
  for (int w = 0; w < 300; ++w) addresses.push_back("w" + std::to_string(w));
  harness.registry().SetStaticWorkers(addresses);
  for (const std::string& a : addresses) harness.Connect(a, RegistryHarness::ModelInfo(a));
  const v1::GenerateTextRequest req = Prompt(170);
  const std::vector<int32_t> tokens(req.prompt_tokens().begin(), req.prompt_tokens().end());
  harness.Stored("w123", HashFullBlocks(RootHash("sha256:test"), tokens, 16));
  RouterCoreOptions options;
  options.decision_sample = 8;
  RouterCore core(&harness.registry(), MakePrefixPolicy({}), nullptr, options);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Send(core, req).status.ok());
  EXPECT_EQ(harness.worker("w123")->calls().size(), 5u);

  // A session stays on its worker though the index knows nothing of it.
  v1::GenerateTextRequest chat = Prompt(40);
  for (int i = 0; i < chat.prompt_tokens_size(); ++i) chat.set_prompt_tokens(i, 300 + i);
  chat.mutable_options()->set_session_id("s1");
  // Its first turn may go to any worker, the holder too (it can be drawn,
  // and ties go in turn): find it by the call it gained.
  std::vector<size_t> before;
  for (const std::string& a : addresses) before.push_back(harness.worker(a)->calls().size());
  ASSERT_TRUE(Send(core, chat).status.ok());
  std::string first;
  for (size_t w = 0; w < addresses.size(); ++w) {
    if (harness.worker(addresses[w])->calls().size() == before[w] + 1) first = addresses[w];
  }
  ASSERT_FALSE(first.empty());
  const size_t first_before = harness.worker(first)->calls().size();
  for (int i = 0; i < 5; ++i) {
    chat.set_prompt_tokens(0, 400 + i);  // a different prompt each turn
    ASSERT_TRUE(Send(core, chat).status.ok());
  }
  EXPECT_EQ(harness.worker(first)->calls().size(), first_before + 5);
}

// The lifetime of a worker's client while requests use it. 50 streams are
// open on two workers; one deregisters gracefully (it leaves the membership
// while its streams still run) and the other dies. Every stream ends: the
// first worker's complete, the dead one's end with a clear error, and the
// deregistered worker's client is freed only once its last stream is done.
// (Run under ASan in scripts/sanitize.sh: a client freed too early is a
// use-after-free there.)
TEST(RouterCoreLifetimeTest, StreamsOutliveTheirWorkersDeregistrationAndDeath) {
  RegistryHarness harness;
  harness.registry().SetStaticWorkers({"dies"});
  harness.registry().Heartbeat("leaves", std::chrono::seconds(60));
  harness.Connect("leaves", RegistryHarness::ModelInfo("leaves"));
  harness.Connect("dies", RegistryHarness::ModelInfo("dies"));
  std::mutex mu;
  std::vector<std::shared_ptr<FakeCall>> leaves_calls, dies_calls;
  for (const char* name : {"leaves", "dies"}) {
    auto& calls = std::string(name) == "leaves" ? leaves_calls : dies_calls;
    harness.worker(name)->set_on_generate([&mu, &calls](const std::shared_ptr<FakeCall>& call) {
      call->SendTokens({3}, "t");
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(call);
    });
  }
  RouterCore core(&harness.registry(), MakeRoundRobinPolicy(), nullptr, {});

  constexpr int kStreams = 50;
  std::vector<Reply> replies(kStreams);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.emplace_back([&, i] { replies[i] = Send(core, Prompt(20 + i)); });
  }
  auto open = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return leaves_calls.size() + dies_calls.size();
  };
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (open() < kStreams && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  ASSERT_EQ(open(), static_cast<size_t>(kStreams));
  ASSERT_FALSE(leaves_calls.empty());
  ASSERT_FALSE(dies_calls.empty());
  EXPECT_EQ(harness.worker("leaves")->inflight.load(), static_cast<int>(leaves_calls.size()));

  // Graceful deregistration: out of the membership and stopped, but alive.
  harness.registry().Deregister("leaves");
  std::weak_ptr<FakeWorkerClient> leaves = harness.worker("leaves");
  {
    const std::shared_ptr<FakeWorkerClient> held = leaves.lock();
    ASSERT_NE(held, nullptr) << "freed while its streams were open";
    EXPECT_TRUE(held->stopped());
  }
  EXPECT_EQ(harness.freed("leaves"), 0);
  auto snap = harness.registry().Snapshot("tiny");
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->healthy().size(), 1u);
  EXPECT_EQ(snap->healthy()[0].worker->address(), "dies");

  // The other dies with its streams open.
  harness.SetHealthy("dies", false);
  for (const auto& call : dies_calls) {
    call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection reset"));
  }
  // The deregistered worker drains: each of its streams completes.
  for (const auto& call : leaves_calls) {
    call->SendTokens({4}, "u", v1::FINISH_REASON_STOP);
    call->Finish();
  }
  for (std::thread& t : clients) t.join();

  int completed = 0, failed = 0;
  for (const Reply& r : replies) {
    ASSERT_FALSE(r.messages.empty());
    if (r.messages[0].worker() == "leaves") {
      EXPECT_TRUE(r.status.ok()) << r.status.message();
      ASSERT_EQ(r.messages.size(), 2u);
      EXPECT_EQ(r.messages[1].finish_reason(), v1::FINISH_REASON_STOP);
      ++completed;
    } else {
      EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
      EXPECT_NE(r.status.message().find("failed after 1 tokens: connection reset"),
                std::string::npos)
          << r.status.message();
      ++failed;
    }
  }
  EXPECT_EQ(completed, static_cast<int>(leaves_calls.size()));
  EXPECT_EQ(failed, static_cast<int>(dies_calls.size()));
  // The calls still reference nothing of the client; with the last lease
  // gone, the deregistered client is freed.
  EXPECT_TRUE(leaves.expired());
  EXPECT_EQ(harness.freed("leaves"), 1);
  EXPECT_EQ(harness.worker("dies")->inflight.load(), 0);
}

// Disaggregated serving with fakes: a long prompt is prefilled on the
// prefill worker, and the decode worker's request carries the fetch hint for
// its pages; a prefill that fails leaves the request served colocated.
class RouterCoreDisaggTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_.registry().SetStaticWorkers({"p:1", "d:1"});
    harness_.Connect("p:1", RegistryHarness::ModelInfo("p", "prefill"));
    harness_.Connect("d:1", RegistryHarness::ModelInfo("d", "decode"));
    p_ = harness_.worker("p:1");
    d_ = harness_.worker("d:1");
  }
  RegistryHarness harness_;
  std::shared_ptr<FakeWorkerClient> p_, d_;
};

TEST_F(RouterCoreDisaggTest, ALongPromptIsPrefilledThereAndItsPagesFetchedByTheDecodeWorker) {
  p_->set_on_generate([](const std::shared_ptr<FakeCall>& call) {
    v1::GenerateResponse done;
    done.set_finish_reason(v1::FINISH_REASON_LENGTH);
    call->Send(done);
    call->Finish();
  });
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  const Reply r = Send(core, Prompt(300));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(p_->calls().size(), 1u);
  const v1::GenerateRequest& prefill = p_->calls()[0]->request();
  EXPECT_EQ(prefill.max_tokens(), 0u);
  EXPECT_EQ(prefill.prompt_tokens_size(), 300);
  ASSERT_EQ(d_->calls().size(), 1u);
  const v1::GenerateRequest& decode = d_->calls()[0]->request();
  ASSERT_TRUE(decode.has_peer_fetch());
  EXPECT_EQ(decode.peer_fetch().address(), "p:1");
  EXPECT_EQ(decode.peer_fetch().worker_id(), "p");
  EXPECT_EQ(decode.peer_fetch().first_block(), 0u);
  EXPECT_EQ(decode.peer_fetch().end_block(), 18u);  // (300 - 1) / 16 full blocks
  EXPECT_EQ(decode.predicted_cached_tokens(), 288u);
  // The client sees the prefill as progress only, then the decode stream.
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_TRUE(IsProgress(r.messages[0]));
  EXPECT_EQ(r.messages[1].worker(), "d");
}

// The client leaves while its prompt is prefilled on the prefill worker:
// that prefill is cancelled and nothing goes to a decode worker.
TEST_F(RouterCoreDisaggTest, AClientGoneDuringThePrefillStopsItThereAndDecodesNothing) {
  std::thread worker;
  p_->set_on_generate(
      [&](const std::shared_ptr<FakeCall>& call) { PrefillsUntilCancelled(call, &worker); });
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  int seen = 0;
  const Reply r = Send(core, Prompt(300), [&](const v1::GenerateTextResponse& m) {
    EXPECT_TRUE(IsProgress(m));
    return ++seen < 2;
  });
  worker.join();
  EXPECT_EQ(r.status.code(), StatusCode::kCancelled);
  ASSERT_EQ(p_->calls().size(), 1u);
  EXPECT_TRUE(p_->calls()[0]->cancelled());
  EXPECT_EQ(seen, 2);
  EXPECT_TRUE(d_->calls().empty());
  EXPECT_TRUE(p_->healthy());  // a cancelled call is no failure of the worker
}

TEST_F(RouterCoreDisaggTest, AShortPromptSkipsThePrefillWorker) {
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  const Reply r = Send(core, Prompt(100));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(p_->calls().empty());
  ASSERT_EQ(d_->calls().size(), 1u);
  EXPECT_FALSE(d_->calls()[0]->request().has_peer_fetch());
}

TEST_F(RouterCoreDisaggTest, AFailedPrefillIsServedColocatedWithNothingLost) {
  p_->set_on_generate(FailsWith(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  RouterCore core(&harness_.registry(), MakePrefixPolicy({}), nullptr, {});
  const Reply r = Send(core, Prompt(300));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(d_->calls().size(), 1u);
  EXPECT_FALSE(d_->calls()[0]->request().has_peer_fetch());
  EXPECT_EQ(d_->calls()[0]->request().prompt_tokens_size(), 300);
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(p_->healthy());  // unreachable: reported
}

}  // namespace
}  // namespace kvmesh::router
