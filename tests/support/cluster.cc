#include "tests/support/cluster.h"

#include <grpcpp/grpcpp.h>

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
                           std::chrono::milliseconds timeout, const std::string& api_key) {
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(router_grpc, grpc::InsecureChannelCredentials()));
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

}  // namespace kvmesh::testing
