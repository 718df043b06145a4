#include "router/router_core.h"

#include <algorithm>
#include <limits>
#include <random>
#include <span>

#include "common/grammar/grammar.h"
#include "common/grammar/json_schema.h"
#include "common/log.h"
#include "router/chat/tool_call_grammar.h"
#include "router/chat_relay.h"
#include "router/request_text_log.h"
#include "router/worker_views.h"

namespace kvmesh::router {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Status FromGrpc(const grpc::Status& s) {
  return Status(static_cast<StatusCode>(s.error_code()), s.error_message());
}

// Failures after which another worker may well succeed.
bool Retryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
         code == grpc::StatusCode::UNKNOWN || code == grpc::StatusCode::INTERNAL ||
         code == grpc::StatusCode::ABORTED;
}

std::string RetryReason(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
      return "unavailable";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "overloaded";
    default:
      return "error";
  }
}

// The GBNF of the options' grammar or json_schema (empty: unconstrained).
StatusOr<std::string> OptionsGrammar(const v1::GenerationOptions& o) {
  if (!o.grammar().empty() && !o.json_schema().empty()) {
    return InvalidArgumentError("give grammar or json_schema, not both");
  }
  if (!o.json_schema().empty()) {
    auto schema = nlohmann::json::parse(o.json_schema(), nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return InvalidArgumentError("json_schema is not valid JSON");
    return grammar::JsonSchemaToGbnf(schema);
  }
  if (!o.grammar().empty()) {
    auto parsed = grammar::Grammar::ParseGbnf(o.grammar());
    if (!parsed.ok()) return parsed.status();
  }
  return o.grammar();
}

Status ValidateOptions(const v1::GenerationOptions& o) {
  if (o.max_tokens() < 0) {
    return InvalidArgumentError("max_tokens must be >= 0, got " + std::to_string(o.max_tokens()));
  }
  if (o.stop_size() > 16) return InvalidArgumentError("at most 16 stop strings");
  if (o.top_logprobs() > 20) {
    return InvalidArgumentError("top_logprobs must be in 0..20, got " +
                                std::to_string(o.top_logprobs()));
  }
  if (o.n() > 16) return InvalidArgumentError("n must be in 1..16, got " + std::to_string(o.n()));
  return Status::Ok();
}

}  // namespace

std::optional<v1::PeerFetch> RouterCore::FetchHint(const Decision& d,
                                                   const std::vector<WorkerView>& views,
                                                   const std::vector<const Candidate*>& conns) {
  if (d.fetch_from < 0 || d.fetch_from == d.index) return std::nullopt;
  v1::PeerFetch fetch;
  fetch.set_address(conns[d.fetch_from]->worker->address());
  fetch.set_worker_id(std::string(views[d.fetch_from].id));
  fetch.set_first_block(static_cast<uint32_t>(d.fetch_first_block));
  fetch.set_end_block(static_cast<uint32_t>(d.fetch_end_block));
  return fetch;
}

RouterCore::RouterCore(Registry* registry, std::unique_ptr<Policy> policy, RouterMetrics* metrics,
                       RouterCoreOptions options)
    : registry_(registry),
      policy_(std::move(policy)),
      metrics_(metrics),
      options_(options),
      watchdog_(options.request_timeout) {}

// Counts a call as in flight for its lifetime.
class RouterCore::ActiveCall {
 public:
  explicit ActiveCall(std::atomic<int>* count) : count_(count) { ++*count_; }
  ~ActiveCall() { --*count_; }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  std::atomic<int>* count_;
};

Status RouterCore::Generate(const v1::GenerateTextRequest& request,
                            const MessageCallback& on_message) {
  const ActiveCall active(&active_);
  RETURN_IF_ERROR(ValidateOptions(request.options()));
  ASSIGN_OR_RETURN(ModelSnapshot snap, registry_->Snapshot(request.model()));
  std::vector<int32_t> tokens;
  if (request.prompt_tokens_size() > 0) {
    if (!request.prompt().empty())
      return InvalidArgumentError("give prompt or prompt_tokens, not both");
    for (int i = 0; i < request.prompt_tokens_size(); ++i) {
      const int32_t t = request.prompt_tokens(i);
      if (t < 0 || t >= snap.group->n_vocab) {
        return InvalidArgumentError("prompt token " + std::to_string(t) + " at index " +
                                    std::to_string(i) + " is outside the vocabulary (0.." +
                                    std::to_string(snap.group->n_vocab - 1) + ")");
      }
      tokens.push_back(t);
    }
  } else {
    tokens = snap.group->tokenizer->Encode(request.prompt(), /*add_special=*/true,
                                           /*parse_special=*/false);
  }
  return Route(snap, std::move(tokens), request.options(), request.request_id(), on_message);
}

StatusOr<RouterCore::RenderedChat> RouterCore::RenderChat(const v1::ChatRequest& request,
                                                          bool find_breakpoints) {
  ASSIGN_OR_RETURN(ModelSnapshot snap, registry_->Snapshot(request.model()));
  const ModelGroup& g = *snap.group;
  if (!g.chat_template) {
    return FailedPreconditionError("model " + g.name + " has no usable chat template (" +
                                   g.chat_template_error.message() +
                                   "); start the router with --chat-template NAME");
  }
  std::vector<ChatMessage> messages;
  for (const v1::ChatMessage& m : request.messages()) {
    ChatMessage message{m.role(), m.content()};
    for (const v1::ToolCall& call : m.tool_calls()) {
      message.tool_calls.push_back({call.id(), call.name(), call.arguments_json()});
    }
    message.reasoning_content = m.reasoning_content();
    message.tool_call_id = m.tool_call_id();
    message.name = m.name();
    messages.push_back(std::move(message));
  }
  ASSIGN_OR_RETURN(std::string text, g.chat_template->Render(messages, true, request.tools_json()));
  std::vector<int32_t> tokens =
      g.tokenizer->Encode(text, !g.chat_template->bos_in_text(), /*parse_special=*/true);
  // A breakpoint's prefix: the conversation up to its message, rendered on
  // its own, as far as its tokens agree with the whole prompt's (templates
  // may write a closing turn differently when it is the last).
  std::vector<v1::RetainPrefix> retain;
  for (size_t i = 0; find_breakpoints && i < messages.size(); ++i) {
    const uint32_t ttl = request.messages(static_cast<int>(i)).cache_ttl_seconds();
    if (ttl == 0) continue;
    auto prefix_text =
        g.chat_template->Render(std::span(messages).first(i + 1),
                                /*add_generation_prompt=*/false, request.tools_json());
    if (!prefix_text.ok()) continue;  // the template refuses a partial conversation
    const std::vector<int32_t> prefix =
        g.tokenizer->Encode(*prefix_text, !g.chat_template->bos_in_text(), true);
    const size_t agree =
        std::mismatch(prefix.begin(), prefix.end(), tokens.begin(), tokens.end()).first -
        prefix.begin();
    v1::RetainPrefix span;
    span.set_tokens(static_cast<uint32_t>(agree));
    span.set_seconds(ttl);
    retain.push_back(span);
  }
  return RenderedChat{std::move(snap), std::move(text), std::move(tokens), std::move(retain)};
}

Status RouterCore::Chat(const v1::ChatRequest& request, const MessageCallback& on_message) {
  const ActiveCall active(&active_);
  RETURN_IF_ERROR(ValidateOptions(request.options()));
  ASSIGN_OR_RETURN(RenderedChat chat, RenderChat(request, /*find_breakpoints=*/true));
  const ModelGroup& g = *chat.snap.group;
  const std::string& choice = request.tool_choice();
  const bool forced = !choice.empty() && choice != "auto";
  ChatExtras extras;
  if (forced) {
    if (!request.options().grammar().empty() || !request.options().json_schema().empty()) {
      return InvalidArgumentError("a forced tool call (tool_choice " + choice +
                                  ") cannot be combined with a grammar or json_schema");
    }
    auto tools = nlohmann::ordered_json::parse(request.tools_json(), nullptr, false);
    if (tools.is_discarded()) tools = nlohmann::ordered_json::array();
    ASSIGN_OR_RETURN(extras.grammar, ToolCallGrammar(g.chat_template->output_syntax().tool_calls,
                                                     tools, choice == "required" ? "" : choice));
  }
  std::map<uint32_t, ChatRelay> relays;  // one per choice
  extras.render_special_tokens =
      ChatRelay::MarkerTokens(*g.tokenizer, g.chat_template->output_syntax());
  extras.retain = std::move(chat.retain);
  uint32_t breakpoint_tokens = 0;
  for (const v1::RetainPrefix& span : extras.retain) {
    breakpoint_tokens = std::max(breakpoint_tokens, span.tokens());
  }
  return Route(
      chat.snap, std::move(chat.tokens), request.options(), request.request_id(),
      [&](const v1::GenerateTextResponse& message) {
        ChatRelay& relay = relays
                               .try_emplace(message.choice(), *g.chat_template, chat.text,
                                            request.tools_json(), forced)
                               .first->second;
        v1::GenerateTextResponse out = relay.Relay(message);
        if (out.has_usage() && breakpoint_tokens > out.usage().cached_tokens()) {
          out.mutable_usage()->set_cache_write_tokens(breakpoint_tokens -
                                                      out.usage().cached_tokens());
        }
        return on_message(out);
      },
      extras);
}

StatusOr<int64_t> RouterCore::CountChatTokens(const v1::ChatRequest& request) {
  ASSIGN_OR_RETURN(RenderedChat chat, RenderChat(request, /*find_breakpoints=*/false));
  return static_cast<int64_t>(chat.tokens.size());
}

StatusOr<v1::ListModelsResponse> RouterCore::ListModels() {
  v1::ListModelsResponse resp;
  const auto healthy = registry_->HealthyCounts();
  for (const std::string& name : registry_->ModelNames()) {
    auto snap = registry_->Snapshot(name);
    if (!snap.ok()) continue;
    v1::ModelInfo* m = resp.add_models();
    m->set_name(name);
    m->set_context_length(snap->group->context_length);
    auto it = healthy.find(name);
    m->set_workers(it == healthy.end() ? 0 : it->second);
  }
  const int served = resp.models_size();
  for (const ModelAlias& alias : registry_->model_aliases()) {
    for (int i = 0; i < served; ++i) {
      if (resp.models(i).name() != alias.model) continue;
      v1::ModelInfo* m = resp.add_models();
      *m = resp.models(i);
      m->set_name(alias.pattern);
      m->set_alias_of(alias.model);
    }
  }
  return resp;
}

StatusOr<v1::TokenizeResponse> RouterCore::Tokenize(const v1::TokenizeRequest& request) {
  ASSIGN_OR_RETURN(ModelSnapshot snap, registry_->Snapshot(request.model()));
  v1::TokenizeResponse resp;
  const auto ids =
      snap.group->tokenizer->Encode(request.text(), request.add_special(), request.parse_special());
  resp.mutable_tokens()->Assign(ids.begin(), ids.end());
  return resp;
}

Status RouterCore::Route(const ModelSnapshot& first_snapshot, std::vector<int32_t> tokens,
                         const v1::GenerationOptions& options, std::string request_id,
                         const MessageCallback& client, const ChatExtras& extras) {
  const Clock::time_point arrival = Clock::now();
  ModelGroup& group = *first_snapshot.group;
  std::string gbnf = extras.grammar;
  if (gbnf.empty()) {
    auto from_options = OptionsGrammar(options);
    if (!from_options.ok()) return from_options.status();
    gbnf = std::move(from_options).value();
  }
  const auto n_prompt = static_cast<int32_t>(tokens.size());
  if (n_prompt == 0) return InvalidArgumentError("the prompt is empty");
  if (group.context_length > 0 && n_prompt >= group.context_length) {
    return InvalidArgumentError("the prompt has " + std::to_string(n_prompt) + " tokens; model " +
                                group.name + " takes at most " +
                                std::to_string(group.context_length - 1));
  }
  if (request_id.empty()) {
    static const uint64_t kSalt = std::random_device{}();
    request_id = "r" + std::to_string(kSalt % 100000) + "-" + std::to_string(next_id_++);
  }
  int32_t max_tokens =
      options.has_max_tokens() ? options.max_tokens() : options_.default_max_tokens;
  if (group.context_length > 0) max_tokens = std::min(max_tokens, group.context_length - n_prompt);

  const std::vector<BlockHash> hashes =
      HashFullBlocks(RootHash(group.digest, options.cache_salt()), tokens, group.block_size);
  // The worker always recomputes at least the last prompt token.
  const int32_t max_cacheable_blocks = (n_prompt - 1) / group.block_size;

  v1::GenerateRequest forward;
  forward.set_request_id(request_id);
  forward.mutable_prompt_tokens()->Assign(tokens.begin(), tokens.end());
  *forward.mutable_sampling() = options.sampling();
  forward.set_max_tokens(max_tokens);
  for (const std::string& s : options.stop()) forward.add_stop(s);
  forward.set_ignore_eos(options.ignore_eos());
  forward.set_cache_salt(options.cache_salt());
  forward.mutable_render_special_tokens()->Assign(extras.render_special_tokens.begin(),
                                                  extras.render_special_tokens.end());
  for (const v1::RetainPrefix& span : extras.retain) *forward.add_retain() = span;
  forward.set_grammar(gbnf);
  forward.set_logprobs(options.logprobs());
  forward.set_top_logprobs(options.top_logprobs());
  forward.set_prompt_logprobs(options.prompt_logprobs());
  forward.set_n(options.n());
  const RequestTextLog text_log(options_.log_request_text, request_id, group.tokenizer.get(),
                                tokens, client);
  const MessageCallback& on_message = text_log.callback();
  RouteRequest r;
  r.group = &group;
  r.request_id = request_id;
  r.n_prompt = n_prompt;
  r.hashes = hashes;
  r.max_cacheable_blocks = max_cacheable_blocks;
  r.options = &options;
  r.arrival = arrival;
  // With prefill workers, a long prompt is computed there first.
  if (!options.prompt_logprobs()) {
    bool cancelled = false;
    r.prefilled = PrefillElsewhere(first_snapshot, hashes, max_cacheable_blocks, forward,
                                   on_message, &cancelled);
    if (cancelled) return CancelledError("the client cancelled the request during its prefill");
  }

  WorkerSet tried;
  Status last_error = UnavailableError("no healthy worker serves model " + group.name);
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ModelSnapshot snap = first_snapshot;
    if (attempt > 0) {
      auto fresh = registry_->Snapshot(group.name);
      if (!fresh.ok()) return fresh.status();
      snap = std::move(fresh).value();
    }
    // A session's requests are decided one at a time, so those arriving
    // together follow the first one's choice.
    const std::string session =
        options.session_id().empty() ? "" : SessionAffinity::Key(group.name, options.session_id());
    std::unique_lock<std::mutex> session_lock;
    std::optional<SessionAffinity::Hint> hint;
    if (!session.empty()) {
      session_lock = sessions_.Lock(session);
      hint = sessions_.Find(session);
    }
    const Clock::time_point t0 = Clock::now();
    std::optional<Plan> plan = PlanAttempt(snap, tried, r, hint);
    if (!plan) break;  // every healthy worker was tried
    if (metrics_) {
      metrics_->OnDecision(std::string(policy_->name()), plan->decision.reason,
                           Seconds(Clock::now() - t0));
    }
    forward.clear_peer_fetch();  // a retry decides afresh
    if (plan->fetch) *forward.mutable_peer_fetch() = *plan->fetch;
    forward.set_predicted_cached_tokens(plan->predicted);
    // Guesses only past what the worker's events already confirm: an agent's
    // long prompt is mostly held where it goes, and each guess costs an
    // index write.
    group.index.AddOptimistic(
        plan->slot, std::span<const BlockHash>(hashes).subspan(std::min(
                        hashes.size(), static_cast<size_t>(std::max(0, plan->exact_blocks)))));
    if (!session.empty())
      sessions_.Record(session, {std::string(plan->view.id), n_prompt, plan->slot,
                                 std::max(0, n_prompt - plan->predicted)});
    log_.Decided({std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count(),
                  request_id, group.name, std::string(plan->view.id), std::string(policy_->name()),
                  plan->decision.reason, n_prompt, plan->view.cached_tokens});
    WorkerLease lease(plan->worker, n_prompt - plan->predicted);
    // The next request of the session sees this one in the worker's load.
    if (session_lock.owns_lock()) session_lock.unlock();
    AttemptEnd end = Relay(lease, *plan, forward, r, on_message);
    if (!end.retry) return end.status;
    last_error = std::move(end.status);
    tried.Add(plan->slot);
    if (metrics_) metrics_->OnRetry(end.retry_reason);
    Log(LogLevel::kInfo, "router",
        "request " + request_id + ": " + last_error.message() + "; retrying");
  }
  return last_error;
}

namespace {

// At debug level, each decision with what the policy saw of every candidate:
// why a request went where it went.
void LogDecision(int32_t n_prompt, const std::vector<WorkerView>& views, const Decision& d) {
  std::string line = "decision " + d.reason + " -> " + std::string(views[d.index].id) + " (" +
                     std::to_string(n_prompt) + " prompt tokens):";
  for (const WorkerView& v : views) {
    line += " " + std::string(v.id) + "[cached " + std::to_string(v.cached_tokens) + " queue " +
            std::to_string(std::max(v.queued_prefill_tokens, v.prefill_inflight_tokens)) +
            " load " + std::to_string(v.load()) + " free " + std::to_string(v.blocks_free) + "/" +
            std::to_string(v.blocks_total) + " evictable " + std::to_string(v.blocks_cached) +
            " sessions " + std::to_string(v.live_sessions) + "/" +
            std::to_string(v.session_tokens) + " prefill/s " +
            std::to_string(static_cast<int64_t>(v.prefill_tokens_per_s)) + "]";
  }
  Log(LogLevel::kDebug, "router", line);
}

}  // namespace

std::optional<RouterCore::Plan> RouterCore::PlanAttempt(
    const ModelSnapshot& snap, const WorkerSet& tried, const RouteRequest& r,
    const std::optional<SessionAffinity::Hint>& hint) const {
  const ModelGroup& group = *r.group;
  WorkerSet candidates;
  // Prefill workers take requests only when no other worker can.
  for (const Candidate& c : snap.healthy()) {
    if (!tried.Contains(c.slot) && c.worker->role() != "prefill") candidates.Add(c.slot);
  }
  if (candidates.empty()) {
    for (const Candidate& c : snap.healthy()) {
      if (!tried.Contains(c.slot)) candidates.Add(c.slot);
    }
  }
  if (candidates.empty()) return std::nullopt;

  const PrefixMatch match = group.index.Match(r.hashes, candidates);
  if (options_.decision_sample > 0 && candidates.size() > 2 * options_.decision_sample) {
    candidates =
        SampleCandidates(snap, candidates, match, options_.decision_sample, hint ? hint->slot : -1);
  }
  std::vector<WorkerView> views;
  std::vector<const Candidate*> conns;
  BuildWorkerViews(snap, candidates, match, r.max_cacheable_blocks, r.options->prompt_logprobs(),
                   hint, &views, &conns);
  const SessionAffinity::LiveSummary live = sessions_.SessionTokens(views, hint);
  Plan plan;
  const int32_t hold = SessionHoldTokens(
      hint, r.n_prompt, r.max_cacheable_blocks * group.block_size, r.options->prompt_logprobs());
  if (!StickToSession(hint, views, hold, options_.session_guard_ratio, options_.session_guard_slack,
                      &plan.decision)) {
    const bool named = !r.options->session_id().empty();
    plan.decision =
        policy_->Choose({r.n_prompt, views, r.hashes, group.block_size,
                         named ? live.mean_tokens : 0, named ? live.mean_turn_tokens : 0});
  }
  const Decision& d = plan.decision;
  if (GetLogLevel() == LogLevel::kDebug) LogDecision(r.n_prompt, views, d);
  plan.worker = conns[d.index]->worker;
  plan.view = views[d.index];
  plan.slot = plan.view.slot;
  plan.exact_blocks = match.exact_blocks[plan.slot];
  plan.predicted = plan.view.cached_tokens;
  plan.fetch = FetchHint(d, views, conns);
  if (plan.fetch) plan.predicted = std::max(plan.predicted, d.fetch_end_block * group.block_size);
  if (r.prefilled && r.prefilled->worker_id() != plan.view.id) {
    // The prompt's pages wait on the prefill worker. The fetch starts after
    // the decode worker's device blocks (fetched pages go to the device,
    // and a prefix is device blocks first).
    const WorkerView& v = plan.view;
    const auto first =
        static_cast<uint32_t>((v.cached_tokens - v.host_cached_tokens) / group.block_size);
    if (first < r.prefilled->end_block()) {
      plan.fetch = *r.prefilled;
      plan.fetch->set_first_block(first);
      plan.predicted = static_cast<int32_t>(r.prefilled->end_block()) * group.block_size;
    }
  }
  return plan;
}

namespace {

RouterCore::AttemptEnd Done(Status status) {
  RouterCore::AttemptEnd end;
  end.status = std::move(status);
  return end;
}

}  // namespace

RouterCore::AttemptEnd RouterCore::Relay(WorkerLease& lease, const Plan& plan,
                                         const v1::GenerateRequest& forward, const RouteRequest& r,
                                         const MessageCallback& on_message) {
  const v1::GenerationOptions& options = *r.options;
  const std::string& request_id = r.request_id;
  const int32_t n_prompt = r.n_prompt;
  // Logprob entries name their tokens' text for the client.
  const Tokenizer& tokenizer = *r.group->tokenizer;
  auto with_text = [&tokenizer](const v1::TokenLogprob& in, v1::TokenLogprob* out) {
    *out = in;
    out->set_text(tokenizer.TokenToPiece(in.token(), /*render_special=*/true));
    for (v1::TokenLogprob& alt : *out->mutable_top()) {
      alt.set_text(tokenizer.TokenToPiece(alt.token(), /*render_special=*/true));
    }
  };
  const std::string worker_id = lease->worker_id();

  const std::unique_ptr<GenerateStream> stream = lease->Generate(forward);
  GenerateStream* const raw = stream.get();
  const std::unique_ptr<StreamWatchdog::Guard> watch = watchdog_.Watch([raw] { raw->Cancel(); });
  v1::GenerateResponse resp;
  bool relayed = false, cancelled = false;
  int64_t relayed_tokens = 0;
  while (stream->Read(&resp)) {
    watch->Touch();
    if (cancelled) continue;  // drain until the worker confirms the cancel
    const bool progress_only = resp.tokens_size() == 0 && resp.text().empty() &&
                               resp.finish_reason() == v1::FINISH_REASON_UNSPECIFIED;
    if (progress_only) {  // the prefill moved: nothing for the client, who may have gone
      v1::GenerateTextResponse progress;
      progress.set_worker(worker_id);
      progress.set_request_id(request_id);
      if (!on_message(progress)) {
        stream->Cancel();
        cancelled = true;
      }
      continue;
    }
    lease.PrefillDone();
    if (resp.choice() >= std::max<uint32_t>(1, options.n())) {
      stream->Cancel();
      cancelled = true;
      Log(LogLevel::kError, "router",
          "worker " + worker_id + " sent choice " + std::to_string(resp.choice()) +
              " of a request with n=" + std::to_string(options.n()) + "; cancelled");
      continue;
    }
    v1::GenerateTextResponse out;
    out.set_text(resp.text());
    out.mutable_tokens()->CopyFrom(resp.tokens());
    out.set_worker(worker_id);
    out.set_request_id(request_id);
    out.set_choice(resp.choice());
    for (const v1::TokenLogprob& lp : resp.logprobs()) with_text(lp, out.add_logprobs());
    // The prompt's token texts concatenate to its detokenized text (what
    // echo shows): control tokens show nothing, and the space an SPM
    // vocabulary puts before the text is dropped, as decoding does.
    bool first_text = true;
    for (const v1::TokenLogprob& lp : resp.prompt_logprobs()) {
      v1::TokenLogprob* entry = out.add_prompt_logprobs();
      with_text(lp, entry);
      std::string text = tokenizer.TokenToPiece(lp.token(), /*render_special=*/false);
      if (first_text && !text.empty()) {
        if (tokenizer.config().add_space_prefix && text[0] == ' ') text.erase(0, 1);
        first_text = false;
      }
      entry->set_text(std::move(text));
    }
    const bool last = resp.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
    if (last) {
      out.set_finish_reason(resp.finish_reason());
      out.set_stop_sequence(resp.stop_sequence());
      *out.mutable_usage() = resp.usage();
      *out.mutable_timings() = resp.timings();
      if (resp.choice() == 0) {
        log_.Finished(request_id, worker_id, n_prompt,
                      static_cast<int32_t>(resp.usage().cached_tokens()));
      }
      if (metrics_ && resp.choice() == 0) {
        metrics_->OnCachedTokens(plan.predicted, static_cast<int32_t>(resp.usage().cached_tokens()),
                                 n_prompt);
      }
    }
    if (!relayed && resp.tokens_size() > 0 && metrics_)
      metrics_->OnFirstToken(Seconds(Clock::now() - r.arrival));
    relayed = relayed || resp.tokens_size() > 0 || last;
    relayed_tokens += resp.tokens_size();
    if (!on_message(out)) {
      stream->Cancel();
      cancelled = true;
    }
  }
  const grpc::Status status = stream->Finish();
  if (metrics_ && (relayed || status.ok()))
    metrics_->OnRequestDone(Seconds(Clock::now() - r.arrival));
  if (cancelled) return Done(CancelledError("the client cancelled the request"));
  if (status.ok()) return Done(Status::Ok());
  if (watch->timed_out()) {
    Status stalled = DeadlineExceededError(
        "worker " + worker_id + " made no progress for " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(options_.request_timeout).count()) +
        " s (no token, no prefill chunk); the request was cancelled");
    if (relayed) return Done(std::move(stalled));
    // Nothing reached the client: the worker is hung (SIGSTOP, a stuck
    // device) or hopelessly behind. It leaves the routing set until it
    // answers a poll again, and the request goes elsewhere.
    lease->ReportFailure();
    return {std::move(stalled), /*retry=*/true, "stalled"};
  }
  if (relayed) {
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) lease->ReportFailure();
    return Done(UnavailableError("worker " + worker_id + " failed after " +
                                 std::to_string(relayed_tokens) +
                                 " tokens: " + status.error_message()));
  }
  if (!Retryable(status.error_code())) return Done(FromGrpc(status));
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) lease->ReportFailure();
  return {FromGrpc(status).WithPrefix("worker " + worker_id), /*retry=*/true,
          RetryReason(status.error_code())};
}

}  // namespace kvmesh::router
