#include "base/result.h"

#include <cerrno>
#include <cstring>

namespace bm {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kPeerLost:
      return "peer lost";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kFailed:
      return "failed";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", context, message_));
}

Status ErrnoStatus(std::string_view what, std::string_view path, int err) {
  return Errorf(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{} {}: {}", what, path,
                std::strerror(err));
}

int Status::ExitCode() const {
  switch (code_) {
    case ErrorCode::kOk:
      return 0;
    case ErrorCode::kInvalidArgument:
      return 2;
    default:
      return 1;
  }
}

}  // namespace bm
