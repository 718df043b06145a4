// Status and StatusOr<T>: the error currency at module and process boundaries.
//
// A Status is either OK or carries a code and a message a user can act on
// ("model.gguf: tensor blk.3.attn_q.weight extends past end of file (offset
// 1234, size 4096, file 2048)"). Running out of an expected resource (blocks,
// queue slots) is not an error: such APIs return an ordinary value instead.
// Both types are cheap to move and safe to use from any thread.
#pragma once

#include <cassert>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kvmesh {

// Numbered as gRPC's status codes, so conversion at the RPC boundary is a
// plain cast.
enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message" (for adding context).
  Status WithPrefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status OutOfRangeError(std::string message);
Status DataLossError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status FailedPreconditionError(std::string message);
Status ResourceExhaustedError(std::string message);
Status UnavailableError(std::string message);
Status CancelledError(std::string message);
Status DeadlineExceededError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnauthenticatedError(std::string message);
Status AlreadyExistsError(std::string message);

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<0>(data_).ok()) {
      data_ = Status(StatusCode::kInternal, "StatusOr constructed from an OK status");
    }
  }
  StatusOr(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return data_.index() == 1; }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<0>(data_);
  }

  T& value() & {
    CheckOk();
    return std::get<1>(data_);
  }
  const T& value() const& {
    CheckOk();
    return std::get<1>(data_);
  }
  T&& value() && {
    CheckOk();
    return std::get<1>(std::move(data_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  void CheckOk() const {
    if (!ok()) {
      AbortOnBadAccess(std::get<0>(data_));
    }
  }
  [[noreturn]] static void AbortOnBadAccess(const Status& status);

  std::variant<Status, T> data_;
};

namespace internal {
[[noreturn]] void DieWithStatus(const Status& status);
}  // namespace internal

template <typename T>
void StatusOr<T>::AbortOnBadAccess(const Status& status) {
  internal::DieWithStatus(status);
}

}  // namespace kvmesh

#define KVMESH_CONCAT_INNER_(a, b) a##b
#define KVMESH_CONCAT_(a, b) KVMESH_CONCAT_INNER_(a, b)

// Returns from the current function when `expr` yields a non-OK Status.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::kvmesh::Status kvmesh_status_ = (expr);        \
    if (!kvmesh_status_.ok()) return kvmesh_status_; \
  } while (0)

// `lhs = value of expr`, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(KVMESH_CONCAT_(kvmesh_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
