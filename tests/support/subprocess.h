// Subprocess: starts a program (a kvmesh binary under test) with its stdout
// captured, waits for a line announcing it is ready, and stops it with a
// signal. The destructor kills a process that is still running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace kvmesh::testing {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts `argv[0]` with the arguments; stderr goes to `stderr_path` (or
  // this process's stderr when empty).
  bool Start(const std::vector<std::string>& argv, const std::string& stderr_path = "");
  // Reads stdout until a line contains `marker`; returns that line, or ""
  // on timeout or exit.
  std::string WaitForLine(const std::string& marker, std::chrono::milliseconds timeout);
  // key=value pairs of a line like "x listening grpc=h:1 http=h:2".
  static std::map<std::string, std::string> ParseFields(const std::string& line);

  pid_t pid() const { return pid_; }
  bool Signal(int sig);
  // Waits for exit; returns the exit status (128+signal when killed), or -1
  // on timeout.
  int Wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  int exit_status_ = -1;
};

// A free TCP port on 127.0.0.1 (bind to 0 and release).
int FreePort();

}  // namespace kvmesh::testing
