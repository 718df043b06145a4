#include "common/status.h"

#include <cstdio>

namespace kvmesh {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_);
}

Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status OutOfRangeError(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
Status UnavailableError(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
Status PermissionDeniedError(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
Status UnauthenticatedError(std::string m) {
  return Status(StatusCode::kUnauthenticated, std::move(m));
}
Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}

namespace internal {
void DieWithStatus(const Status& status) {
  std::fprintf(stderr, "fatal: value() on a StatusOr holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace internal

}  // namespace kvmesh
