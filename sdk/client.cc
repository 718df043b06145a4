#include "sdk/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <thread>

#include "kvmesh/v1/inference.grpc.pb.h"

namespace kvmesh {
namespace {

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(s.error_code()), s.error_message());
}

std::string FinishName(v1::FinishReason r) {
  switch (r) {
    case v1::FINISH_REASON_LENGTH:
      return "length";
    case v1::FINISH_REASON_STOP:
      return "stop";
    case v1::FINISH_REASON_CANCELLED:
      return "cancelled";
    case v1::FINISH_REASON_CONTEXT:
      return "context";
    case v1::FINISH_REASON_TOOL_CALLS:
      return "tool_calls";
    default:
      return "";
  }
}

void FillOptions(const GenerateParams& p, v1::GenerationOptions* o) {
  v1::SamplingParams* s = o->mutable_sampling();
  if (p.temperature) s->set_temperature(*p.temperature);
  if (p.top_p) s->set_top_p(*p.top_p);
  if (p.top_k) s->set_top_k(*p.top_k);
  if (p.min_p) s->set_min_p(*p.min_p);
  if (p.repetition_penalty) s->set_repetition_penalty(*p.repetition_penalty);
  if (p.seed) s->set_seed(*p.seed);
  if (p.max_tokens) o->set_max_tokens(*p.max_tokens);
  for (const std::string& stop : p.stop) o->add_stop(stop);
  o->set_cache_salt(p.cache_salt);
  o->set_grammar(p.grammar);
  o->set_json_schema(p.json_schema);
  o->set_logprobs(p.logprobs);
  o->set_top_logprobs(static_cast<uint32_t>(std::max(0, p.top_logprobs)));
  o->set_prompt_logprobs(p.prompt_logprobs);
}

TokenLogprob FromProto(const v1::TokenLogprob& in) {
  TokenLogprob out;
  out.token = in.token();
  out.text = in.text();
  if (in.has_logprob()) out.logprob = in.logprob();
  for (const v1::TokenLogprob& alt : in.top()) out.top.push_back(FromProto(alt));
  return out;
}

}  // namespace

class Client::Impl {
 public:
  Impl(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
      : options_(std::move(options)), stub_(v1::Inference::NewStub(channel)) {}

  void Prepare(grpc::ClientContext* ctx, std::optional<std::chrono::milliseconds> timeout) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      timeout.value_or(options_.default_timeout));
    if (!options_.api_key.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.api_key);
  }

  // Runs a streaming call with retries before the first delivered text.
  template <typename StartFn>
  StatusOr<Completion> Stream(StartFn start, const GenerateParams& params,
                              const TextCallback& on_text) {
    std::chrono::milliseconds backoff = options_.retry_backoff;
    for (int attempt = 0;; ++attempt) {
      grpc::ClientContext ctx;
      Prepare(&ctx, params.timeout);
      auto reader = start(&ctx);
      Completion out;
      bool delivered = false, cancelled = false;
      v1::GenerateTextResponse m;
      while (reader->Read(&m)) {
        out.text += m.text();
        out.tokens.insert(out.tokens.end(), m.tokens().begin(), m.tokens().end());
        for (const v1::TokenLogprob& lp : m.logprobs()) out.logprobs.push_back(FromProto(lp));
        for (const v1::TokenLogprob& lp : m.prompt_logprobs()) {
          out.prompt_logprobs.push_back(FromProto(lp));
        }
        if (!m.worker().empty()) out.worker = m.worker();
        if (!m.request_id().empty()) out.request_id = m.request_id();
        if (m.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
          out.finish_reason = FinishName(m.finish_reason());
          out.prompt_tokens = m.usage().prompt_tokens();
          out.cached_tokens = m.usage().cached_tokens();
          out.completion_tokens = m.usage().completion_tokens();
          out.ttft_ms = m.timings().ttft_ms();
        }
        if (!m.text().empty() || m.tokens_size() > 0) delivered = true;
        if (on_text && !m.text().empty() && !cancelled && !on_text(m.text())) {
          ctx.TryCancel();
          cancelled = true;
        }
      }
      const grpc::Status status = reader->Finish();
      if (cancelled) {
        out.finish_reason = "cancelled";
        return out;
      }
      if (status.ok()) return out;
      const bool retryable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
      if (delivered || !retryable || attempt >= options_.max_retries) return FromGrpc(status);
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }

  ClientOptions options_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.address.empty()) return InvalidArgumentError("client: no router address given");
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs;
    ssl.pem_cert_chain = options.tls_cert_chain;
    ssl.pem_private_key = options.tls_private_key;
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(options.address, creds, args);
  return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(options, channel)));
}

StatusOr<Completion> Client::Generate(const std::string& prompt, const GenerateParams& params,
                                      const TextCallback& on_text) {
  v1::GenerateTextRequest req;
  req.set_model(params.model);
  req.set_prompt(prompt);
  FillOptions(params, req.mutable_options());
  return impl_->Stream([&](grpc::ClientContext* ctx) { return impl_->stub_->Generate(ctx, req); },
                       params, on_text);
}

StatusOr<Completion> Client::Chat(const std::vector<ChatTurn>& messages,
                                  const GenerateParams& params, const TextCallback& on_text) {
  v1::ChatRequest req;
  req.set_model(params.model);
  for (const ChatTurn& t : messages) {
    v1::ChatMessage* m = req.add_messages();
    m->set_role(t.role);
    m->set_content(t.content);
  }
  FillOptions(params, req.mutable_options());
  return impl_->Stream([&](grpc::ClientContext* ctx) { return impl_->stub_->Chat(ctx, req); },
                       params, on_text);
}

StatusOr<std::vector<ModelEntry>> Client::ListModels() {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, std::chrono::seconds(10));
  v1::ListModelsResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub_->ListModels(&ctx, v1::ListModelsRequest(), &resp)));
  std::vector<ModelEntry> out;
  for (const v1::ModelInfo& m : resp.models())
    out.push_back({m.name(), m.context_length(), m.workers()});
  return out;
}

StatusOr<std::vector<int32_t>> Client::Tokenize(const std::string& model, const std::string& text,
                                                bool add_special) {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, std::chrono::seconds(10));
  v1::TokenizeRequest req;
  req.set_model(model);
  req.set_text(text);
  req.set_add_special(add_special);
  v1::TokenizeResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub_->Tokenize(&ctx, req, &resp)));
  return std::vector<int32_t>(resp.tokens().begin(), resp.tokens().end());
}

}  // namespace kvmesh
