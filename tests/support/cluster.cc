#include "tests/support/cluster.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <cstdlib>
#include <thread>

#include "kvmesh/v1/inference.grpc.pb.h"

namespace kvmesh::testing {
namespace {

std::string LogPath(const std::string& name) {
  if (name.empty()) return "";
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name + ".log";
}

ProcessHandle StartProcess(std::vector<std::string> argv, const std::string& log_name) {
  ProcessHandle h;
  h.process = std::make_unique<Subprocess>();
  if (!h.process->Start(argv, LogPath(log_name))) return h;
  const std::string line = h.process->WaitForLine("listening", std::chrono::seconds(60));
  if (line.empty()) return h;
  auto fields = Subprocess::ParseFields(line);
  h.grpc = fields["grpc"];
  h.http = fields["http"];
  h.id = fields["id"];
  h.grpc_port = std::atoi(h.grpc.substr(h.grpc.rfind(':') + 1).c_str());
  return h;
}

}  // namespace

ProcessHandle StartWorker(const std::string& binary, const std::vector<std::string>& extra,
                          int grpc_port, const std::string& log_name) {
  std::vector<std::string> argv = {binary,        "--grpc-port", std::to_string(grpc_port),
                                   "--http-port", "0",           "--threads",
                                   "1",           "--kv-memory", "64MiB",
                                   "--log-level", "warning"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return StartProcess(argv, log_name);
}

ProcessHandle StartRouter(const std::string& binary, const std::vector<std::string>& workers,
                          const std::vector<std::string>& extra, const std::string& log_name) {
  std::string list;
  for (const std::string& w : workers) list += (list.empty() ? "" : ",") + w;
  std::vector<std::string> argv = {binary, "--grpc-port", "0",       "--http-port",
                                   "0",    "--log-level", "warning", "--poll-interval-seconds",
                                   "0.05"};
  if (!list.empty()) {
    argv.push_back("--workers");
    argv.push_back(list);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return StartProcess(argv, log_name);
}

bool WaitForHealthyWorkers(const std::string& router_grpc, int workers,
                           std::chrono::milliseconds timeout, const std::string& api_key,
                           std::shared_ptr<grpc::ChannelCredentials> credentials) {
  if (!credentials) credentials = grpc::InsecureChannelCredentials();
  auto stub = v1::Inference::NewStub(grpc::CreateChannel(router_grpc, credentials));
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    if (!api_key.empty()) ctx.AddMetadata("authorization", "Bearer " + api_key);
    v1::ListModelsResponse resp;
    if (stub->ListModels(&ctx, v1::ListModelsRequest(), &resp).ok()) {
      // One served model (alias entries name it again).
      int served = 0;
      bool ready = false;
      for (const v1::ModelInfo& m : resp.models()) {
        if (!m.alias_of().empty()) continue;
        ++served;
        ready = static_cast<int>(m.workers()) == workers;
      }
      if (served == 1 && ready) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

Result Generate(v1::Inference::Stub& stub, const std::vector<int32_t>& prompt, int max_tokens,
                const std::string& salt) {
  grpc::ClientContext ctx;
  v1::GenerateTextRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.mutable_options()->set_max_tokens(max_tokens);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_cache_salt(salt);
  auto reader = stub.Generate(&ctx, req);
  Result r;
  v1::GenerateTextResponse m;
  while (reader->Read(&m)) {
    r.text += m.text();
    r.tokens.insert(r.tokens.end(), m.tokens().begin(), m.tokens().end());
    if (!m.worker().empty()) r.worker = m.worker();
    r.last = m;
  }
  r.status = reader->Finish();
  return r;
}

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int32_t> dist(260, 511);  // ordinary text tokens
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = dist(rng);
  return out;
}

std::string HttpGet(const std::string& host_port, const std::string& path) {
  httplib::Client c("http://" + host_port);
  auto res = c.Get(path.c_str());
  return res ? res->body : "";
}

double Metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + series.size() + 2);
}

}  // namespace kvmesh::testing
