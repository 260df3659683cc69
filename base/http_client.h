// bm::http::Client: HTTP(S) and file:// transfers, the only code that sees libcurl.
//
// Used by the remote cache (cache/remote/http_remote.cc) and the `download`
// rule. Every transfer is streamed: a GET hands the body to a Sink piece by
// piece, a PUT reads its body from a file or a Source, so multi-GB blobs never
// sit whole in memory.
//
//   bm::http::Client client(options);
//   Result<Response> r = client.Get(url, [&](const char* p, size_t n) { return out.Write(p, n); });
//   if (!r.ok() && r.status().code() == ErrorCode::kNotFound) ...
//
// Errors (the Status of a Transfer, or of a Result<Response>):
//   kNotFound      HTTP 404 or 410, or a file:// path that does not exist
//   kUnavailable   DNS, connect or TLS failure; the message names which
//   kTimeout       connect timeout, total timeout, or a stall (below
//                  stall_bytes_per_second for stall_seconds, or no byte
//                  moving for stall_seconds)
//   kCorrupt       a truncated body (fewer bytes than Content-Length)
//   kInvalidArgument  a malformed URL, or a file:// GET or HEAD of a directory
//   kFailed        any other HTTP status >= 400 ("HTTP 403 ..." with the code),
//                  or another libcurl failure
//   ...            whatever a Sink or Source returned, unchanged
// A response with status >= 400 never reaches the Sink.
//
// Thread safety: a Client is not thread-safe (it keeps one connection pool);
// use one per thread. Callbacks run on the calling thread, inside Run/RunAll.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace bm::http {

struct ClientOptions {
  // Extra request headers, "Name: value", already expanded by the caller.
  std::vector<std::string> headers;
  // When not empty: "Authorization: Bearer <token>" on every request.
  std::string bearer_token;
  // TLS: a CA bundle to verify the server with (empty: the system's), and a
  // client certificate and key (PEM) for mutual TLS (empty: none).
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
  // Limits. A transfer slower than stall_bytes_per_second for stall_seconds
  // (libcurl's check, over its average speed), or on which no byte moved for
  // stall_seconds (counted from the last byte, however fast the ones before),
  // fails with kTimeout; total_timeout_seconds = 0 means no overall limit.
  double connect_timeout_seconds = 10;
  long stall_bytes_per_second = 1;
  double stall_seconds = 30;
  double total_timeout_seconds = 0;
};

enum class Method { kGet, kHead, kPut };

// What the server answered. For file:// URLs, status is 200 on success.
struct Response {
  long status = 0;                  // HTTP status code, 0 if no response came
  int64_t content_length = -1;      // from the headers (of this response), -1 if unknown
  uint64_t body_offset = 0;         // where the body starts in the resource: range_start on a
                                    // 206 answer, 0 when the server sent the whole resource
  uint64_t bytes = 0;               // body bytes received (GET) or sent (PUT)
  int64_t resource_length = -1;     // the whole resource's length from Content-Range
                                    // ("bytes A-B/N" on a 206, "bytes */N" on a 416),
                                    // -1 when absent or "*"
  int64_t retry_after_seconds = 0;  // the Retry-After header (seconds, or an HTTP date
                                    // made relative), 0 when absent
  // What a later If-Range may name (RFC 9110 §13.1.5): the strong ETag, else
  // Last-Modified; empty when the response has neither (a weak ETag is none).
  std::string validator;
};

// Receives the body of a GET, in order. A failed Status aborts the transfer
// and becomes its result.
using Sink = std::function<Status(const char* data, size_t size)>;
// Fills up to `capacity` bytes of a PUT body; returns how many (0 only at the
// end). A failed Result aborts the transfer and becomes its result.
using Source = std::function<Result<size_t>(char* buffer, size_t capacity)>;
// Bytes transferred so far and the total (0 if unknown). Called often.
using Progress = std::function<void(uint64_t so_far, uint64_t total)>;
// Called once, after the response headers and before the first body byte, for
// a successful (2xx) GET. Lets a resuming caller learn whether the server
// honoured the Range (body_offset) before data arrives. A failed Status aborts.
using OnResponse = std::function<Status(const Response&)>;

// One transfer: fill the request part, then Run/RunAll fill status and response.
struct Transfer {
  Method method = Method::kGet;
  std::string url;
  // GET: the body goes here (required for kGet).
  Sink sink;
  OnResponse on_response;
  uint64_t range_start = 0;  // > 0: ask for bytes from here on ("Range: bytes=N-")
  // With range_start > 0: "If-Range: <if_range>", so that a server whose
  // resource no longer has this validator sends all of it (200), not a range
  // of a different file. Empty: a plain Range, as curl -C - and wget -c send.
  std::string if_range;
  // PUT: the body comes from upload_path when it is set, else from source,
  // which must produce exactly upload_size bytes.
  std::string upload_path;
  Source source;
  uint64_t upload_size = 0;
  Progress progress;

  // Results.
  Status status;
  Response response;
};

class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }

  // HEAD: OK with the status and Content-Length, kNotFound on 404.
  Result<Response> Head(const std::string& url);
  // Streamed GET into `sink`, from byte `range_start` on.
  Result<Response> Get(const std::string& url, Sink sink, uint64_t range_start = 0,
                       Progress progress = {});
  // Streamed PUT of a whole file (its size is taken when the transfer starts).
  Result<Response> PutFile(const std::string& url, const std::string& path, Progress progress = {});
  // Streamed PUT of `size` bytes produced by `source`.
  Result<Response> Put(const std::string& url, Source source, uint64_t size,
                       Progress progress = {});

  // Runs one transfer to completion; returns (and stores) its status.
  Status Run(Transfer& transfer);
  // Runs every transfer, at most max_parallel (>= 1) at a time, over reused
  // connections. Each transfer gets its own status; one failing does not stop
  // the others. Returns the first failure in order, or OK.
  Status RunAll(const std::vector<Transfer*>& transfers, int max_parallel);

 private:
  struct Impl;
  ClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// "HTTP 403 Forbidden"-style text for a status code.
std::string DescribeHttpStatus(long status);

}  // namespace bm::http
