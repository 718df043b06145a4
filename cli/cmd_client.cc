// Client commands against a running router: `kvmesh complete`, `kvmesh chat`
// and `kvmesh models`, through the SDK (sdk/client.h).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "sdk/client.h"

namespace kvmesh::cli {
namespace {

struct ClientFlags {
  std::string router = "127.0.0.1:50050";
  std::string api_key;
  bool tls = false;
  std::string tls_ca;  // files; any of them set means TLS
  std::string tls_cert;
  std::string tls_key;
  std::string model;
  int max_tokens = 0;
  float temperature = -1;  // <0: the server's default
  int64_t seed = -1;
  std::vector<std::string> stop;
  std::string cache_salt;
  double timeout_s = 600;
};

// How to reach the router: its address, the API key and TLS.
void AddConnection(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--router", f->router, "Router gRPC address HOST:PORT");
  cmd->add_option("--api-key", f->api_key, "API key (or env KVMESH_API_KEY)")
      ->envname("KVMESH_API_KEY");
  cmd->add_flag("--tls", f->tls, "Connect over TLS (the system's CAs unless --tls-ca)");
  cmd->add_option("--tls-ca", f->tls_ca, "PEM CA bundle that signs the router's certificate");
  cmd->add_option("--tls-cert", f->tls_cert,
                  "PEM client certificate, for a router that requires one (with --tls-key)");
  cmd->add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert");
}

void AddCommon(CLI::App* cmd, ClientFlags* f) {
  AddConnection(cmd, f);
  cmd->add_option("-m,--model", f->model, "Model name (default: the router's only model)");
  cmd->add_option("-n,--max-tokens", f->max_tokens, "Maximum tokens to generate");
  cmd->add_option("--temp", f->temperature, "Temperature (0 = greedy)");
  cmd->add_option("--seed", f->seed, "Random seed");
  cmd->add_option("--stop", f->stop, "Stop string (repeatable)");
  cmd->add_option("--cache-salt", f->cache_salt, "Separates this tenant's cached prefixes");
  cmd->add_option("--timeout", f->timeout_s, "Seconds before the request is abandoned");
}

StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(std::string(flag) + " " + path + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

StatusOr<std::unique_ptr<Client>> MakeClient(const ClientFlags& f) {
  ClientOptions o;
  o.address = f.router;
  o.api_key = f.api_key;
  o.tls = f.tls || !f.tls_ca.empty() || !f.tls_cert.empty();
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (!f.tls_ca.empty()) {
    ASSIGN_OR_RETURN(o.tls_root_certs, ReadPem(f.tls_ca, "--tls-ca"));
  }
  if (!f.tls_cert.empty()) {
    ASSIGN_OR_RETURN(o.tls_cert_chain, ReadPem(f.tls_cert, "--tls-cert"));
    ASSIGN_OR_RETURN(o.tls_private_key, ReadPem(f.tls_key, "--tls-key"));
  }
  return Client::Connect(o);
}

GenerateParams Params(const ClientFlags& f) {
  GenerateParams p;
  p.model = f.model;
  if (f.max_tokens > 0) p.max_tokens = f.max_tokens;
  if (f.temperature >= 0) p.temperature = f.temperature;
  if (f.seed >= 0) p.seed = static_cast<uint64_t>(f.seed);
  p.stop = f.stop;
  p.cache_salt = f.cache_salt;
  p.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  return p;
}

int Report(const StatusOr<Completion>& c) {
  if (!c.ok()) {
    std::fprintf(stderr, "\nerror: %s\n", c.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "\n[%s | prompt %u tokens (%u cached) | %u generated | finish %s | ttft %.1f ms]\n",
               c->worker.c_str(), c->prompt_tokens, c->cached_tokens, c->completion_tokens,
               c->finish_reason.c_str(), c->ttft_ms);
  return 0;
}

bool Print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace

void RegisterClientCommands(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ClientFlags>();
  auto prompt = std::make_shared<std::string>();
  CLI::App* complete = app.add_subcommand("complete", "Complete a prompt through a kvmesh router");
  AddCommon(complete, f.get());
  complete->add_option("-p,--prompt", *prompt, "Prompt text")->required();
  complete->callback([f, prompt, exit_code] {
    auto client = MakeClient(*f);
    if (!client.ok()) {
      *exit_code = Report(client.status());
      return;
    }
    *exit_code = Report((*client)->Generate(*prompt, Params(*f), Print));
  });

  auto message = std::make_shared<std::string>();
  auto system = std::make_shared<std::string>();
  CLI::App* chat = app.add_subcommand(
      "chat",
      "Chat with a model through a kvmesh router (one -p message, or an interactive session)");
  AddCommon(chat, f.get());
  chat->add_option("-p,--prompt", *message, "One user message (otherwise read lines from stdin)");
  chat->add_option("--system", *system, "System message");
  chat->callback([f, message, system, exit_code] {
    auto client = MakeClient(*f);
    if (!client.ok()) {
      *exit_code = Report(client.status());
      return;
    }
    std::vector<ChatTurn> turns;
    if (!system->empty()) turns.push_back({"system", *system});
    if (!message->empty()) {
      turns.push_back({"user", *message});
      *exit_code = Report((*client)->Chat(turns, Params(*f), Print));
      return;
    }
    std::string line;
    std::fprintf(stderr, "> ");
    while (std::getline(std::cin, line)) {
      turns.push_back({"user", line});
      auto reply = (*client)->Chat(turns, Params(*f), Print);
      if (Report(reply) != 0) {
        *exit_code = 1;
        return;
      }
      turns.push_back({"assistant", reply->text});
      std::fprintf(stderr, "> ");
    }
  });

  CLI::App* models = app.add_subcommand("models", "List the models a kvmesh router serves");
  AddConnection(models, f.get());
  models->callback([f, exit_code] {
    auto client = MakeClient(*f);
    if (!client.ok()) {
      *exit_code = Report(client.status());
      return;
    }
    auto list = (*client)->ListModels();
    if (!list.ok()) {
      std::fprintf(stderr, "error: %s\n", list.status().ToString().c_str());
      *exit_code = 1;
      return;
    }
    for (const ModelEntry& m : *list) {
      std::printf("%s\tcontext %u\tworkers %u\n", m.name.c_str(), m.context_length, m.workers);
    }
  });
}

}  // namespace kvmesh::cli
