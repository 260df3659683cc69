// Status and Result<T>: the one error idiom of benchmake's library code.
//
// Library code never throws across module boundaries and never calls exit();
// it returns a Status (no value) or a Result<T> (a value or a Status). Only
// main() turns a failed Status into a message and an exit code (ExitCode()).
//
//   Result<Manifest> m = LoadManifest(path);
//   if (!m.ok()) return m.status().WithContext("loading " + path);
//   Use(*m);
//
// BM_TRY(expr) returns early with expr's Status when it failed;
// BM_ASSIGN_OR_RETURN(lhs, expr) unwraps a Result<T> or returns its Status.
//
// Thread safety: values only; copy freely.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace bm {

// What kind of failure; each maps to one process exit code in main().
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: BENCHFILE, flags, parameters (exit 2)
  kNotFound,         // a file, target or key that does not exist
  kAlreadyExists,
  kIo,       // the operating system refused (open, write, rename, ...)
  kCorrupt,  // bytes that do not match their digest or format
  kTimeout,
  kUnavailable,  // a remote or a device that cannot be reached
  kPeerLost,     // the other end of an exchange went away mid-way (its connection was reset
                 // or closed, a remote error): the failure is the peer's, not this process's
  kUnsupported,  // a newer file version, a missing optional feature
  kFailed,       // a step or a command ran and failed
  kInternal,     // a bug in benchmake
};

std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message"; an OK status stays OK.
  Status WithContext(std::string_view context) const;

  // Process exit code for this status: 0 OK, 2 invalid input, 1 otherwise.
  int ExitCode() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status Errorf(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

// "what path: strerror(err)", kNotFound for ENOENT and kIo otherwise; `err` is errno by
// default (read it before anything else can change it).
Status ErrnoStatus(std::string_view what, std::string_view path, int err = errno);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(value_).ok() && "Result<T> built from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(value_);
  }

  // Preconditions: ok().
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace bm

#define BM_CONCAT_INNER_(a, b) a##b
#define BM_CONCAT_(a, b) BM_CONCAT_INNER_(a, b)

#define BM_TRY(expr)                                 \
  do {                                               \
    ::bm::Status bm_try_status_ = (expr);            \
    if (!bm_try_status_.ok()) return bm_try_status_; \
  } while (0)

#define BM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define BM_ASSIGN_OR_RETURN(lhs, expr) \
  BM_ASSIGN_OR_RETURN_IMPL_(BM_CONCAT_(bm_result_, __LINE__), lhs, expr)
