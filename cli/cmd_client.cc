// Client commands against a running router: `kvmesh complete`, `kvmesh chat`
// and `kvmesh models`, through the SDK (sdk/client.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "sdk/client.h"

namespace kvmesh::cli {
namespace {

struct ClientFlags {
  std::string router = "127.0.0.1:50050";
  std::string api_key;
  std::string model;
  int max_tokens = 0;
  float temperature = -1;  // <0: the server's default
  int64_t seed = -1;
  std::vector<std::string> stop;
  std::string cache_salt;
  double timeout_s = 600;
};

void AddCommon(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--router", f->router, "Router gRPC address HOST:PORT");
  cmd->add_option("--api-key", f->api_key, "API key (or env KVMESH_API_KEY)")
      ->envname("KVMESH_API_KEY");
  cmd->add_option("-m,--model", f->model, "Model name (default: the router's only model)");
  cmd->add_option("-n,--max-tokens", f->max_tokens, "Maximum tokens to generate");
  cmd->add_option("--temp", f->temperature, "Temperature (0 = greedy)");
  cmd->add_option("--seed", f->seed, "Random seed");
  cmd->add_option("--stop", f->stop, "Stop string (repeatable)");
  cmd->add_option("--cache-salt", f->cache_salt, "Separates this tenant's cached prefixes");
  cmd->add_option("--timeout", f->timeout_s, "Seconds before the request is abandoned");
}

StatusOr<std::unique_ptr<Client>> MakeClient(const ClientFlags& f) {
  ClientOptions o;
  o.address = f.router;
  o.api_key = f.api_key;
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
  models->add_option("--router", f->router, "Router gRPC address HOST:PORT");
  models->add_option("--api-key", f->api_key, "API key")->envname("KVMESH_API_KEY");
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
