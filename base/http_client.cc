#include "base/http_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>

namespace bm::http {
namespace {

// Large buffers: fewer callbacks per GB (libcurl caps them at 512 KiB and 2 MiB).
constexpr long kDownloadBuffer = 512 * 1024;
constexpr long kUploadBuffer = 2 * 1024 * 1024;
constexpr size_t kErrorBodyKept = 200;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool IsFileUrl(const std::string& url) { return url.rfind("file://", 0) == 0; }

// libcurl reads a file:// directory as an empty body, which would pass for a
// downloaded empty file; refuse it instead.
Status CheckNotDirectory(const std::string& url) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  char* path = nullptr;
  if (u == nullptr || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK ||
      curl_url_get(u.get(), CURLUPART_PATH, &path, CURLU_URLDECODE) != CURLUE_OK) {
    return Status::Ok();  // a malformed URL: libcurl's own error follows
  }
  struct stat st;
  const bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
  curl_free(path);
  if (dir) return Errorf(ErrorCode::kInvalidArgument, "{}: is a directory, not a file", url);
  return Status::Ok();
}

// The state of one running transfer; libcurl's callbacks receive it.
struct Active {
  Transfer* t = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  int fd = -1;
  bool file_url = false;
  bool started = false;     // first body byte (or end of headers) seen
  bool error_body = false;  // status >= 400: the body is an error page
  std::string error_text;
  Status callback_status;  // what a Sink/Source/OnResponse returned, if it failed
  char errbuf[CURL_ERROR_SIZE] = {0};
  // The stall check (ClientOptions::stall_seconds): when bytes last moved.
  double stall_seconds = 0;
  curl_off_t moved = -1;
  std::chrono::steady_clock::time_point last_move = std::chrono::steady_clock::now();

  ~Active() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
    if (fd >= 0) close(fd);
  }
};

long ResponseCode(Active& a) {
  long code = 0;
  curl_easy_getinfo(a.easy, CURLINFO_RESPONSE_CODE, &code);
  if (code == 0 && a.file_url) code = 200;  // file:// has no status line
  return code;
}

// N of a Content-Range value "bytes A-B/N" or "bytes */N"; -1 for "*" or junk.
int64_t ContentRangeLength(std::string_view value) {
  const size_t slash = value.rfind('/');
  if (slash == std::string_view::npos) return -1;
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data() + slash + 1, end, n);
  return ec == std::errc() && p == end && n >= 0 ? n : -1;
}

void ReadResponseHead(Active& a) {
  Response& r = a.t->response;
  r.status = ResponseCode(a);
  curl_off_t length = -1;
  curl_easy_getinfo(a.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  r.content_length = length;
  curl_header* range = nullptr;
  if (curl_easy_header(a.easy, "Content-Range", 0, CURLH_HEADER, -1, &range) == CURLHE_OK) {
    r.resource_length = ContentRangeLength(range->value);
  }
  curl_header* h = nullptr;
  if (curl_easy_header(a.easy, "ETag", 0, CURLH_HEADER, -1, &h) == CURLHE_OK &&
      !std::string_view(h->value).starts_with("W/")) {
    r.validator = h->value;
  } else if (curl_easy_header(a.easy, "Last-Modified", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) {
    r.validator = h->value;
  }
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(a.easy, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK) {
    r.retry_after_seconds = retry_after;
  }
  // file:// honours the range; HTTP does only when it answers 206.
  bool ranged = r.status == 206 || (a.file_url && a.t->range_start > 0);
  r.body_offset = ranged ? a.t->range_start : 0;
}

// Runs once per GET when the headers are in: decides where the body goes.
bool StartBody(Active& a) {
  a.started = true;
  ReadResponseHead(a);
  if (a.t->response.status >= 400 || a.t->method != Method::kGet) {
    a.error_body = true;
    return true;
  }
  if (a.t->on_response) {
    Status s = a.t->on_response(a.t->response);
    if (!s.ok()) {
      a.callback_status = s;
      return false;
    }
  }
  return true;
}

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  Active& a = *static_cast<Active*>(user);
  size_t n = size * count;
  if (!a.started && !StartBody(a)) return 0;
  if (a.error_body) {
    if (a.error_text.size() < kErrorBodyKept) {
      a.error_text.append(data, std::min(n, kErrorBodyKept - a.error_text.size()));
    }
    return n;
  }
  Status s = a.t->sink(data, n);
  if (!s.ok()) {
    a.callback_status = s;
    return 0;  // aborts the transfer
  }
  a.t->response.bytes += n;
  return n;
}

size_t OnRead(char* buffer, size_t size, size_t count, void* user) {
  Active& a = *static_cast<Active*>(user);
  size_t capacity = size * count;
  Transfer& t = *a.t;
  uint64_t left = t.upload_size - t.response.bytes;
  capacity = static_cast<size_t>(std::min<uint64_t>(capacity, left));
  if (capacity == 0) return 0;
  size_t got = 0;
  if (a.fd >= 0) {
    ssize_t r;
    do {
      r = read(a.fd, buffer, capacity);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      a.callback_status = Errorf(ErrorCode::kIo, "reading {}: {}", t.upload_path, strerror(errno));
      return CURL_READFUNC_ABORT;
    }
    got = static_cast<size_t>(r);
  } else {
    Result<size_t> r = t.source(buffer, capacity);
    if (!r.ok()) {
      a.callback_status = r.status();
      return CURL_READFUNC_ABORT;
    }
    got = std::min(*r, capacity);
  }
  if (got == 0) {
    a.callback_status = Errorf(ErrorCode::kIo, "upload body of {} ended after {} of {} bytes",
                               t.url, t.response.bytes, t.upload_size);
    return CURL_READFUNC_ABORT;
  }
  t.response.bytes += got;
  return got;
}

int OnProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
               curl_off_t ulnow) {
  Active& a = *static_cast<Active*>(user);
  Transfer& t = *a.t;
  // libcurl's own speed check averages over several seconds, so a body that
  // stops after a burst would run on that long; this one counts from the last byte.
  auto now = std::chrono::steady_clock::now();
  if (dlnow + ulnow != a.moved) {
    a.moved = dlnow + ulnow;
    a.last_move = now;
  } else if (a.stall_seconds > 0 &&
             std::chrono::duration<double>(now - a.last_move).count() >= a.stall_seconds) {
    a.callback_status = Errorf(ErrorCode::kTimeout, "{}: timed out: no bytes moved for {:g} s",
                               t.url, a.stall_seconds);
    return 1;  // aborts the transfer
  }
  if (!t.progress) return 0;
  if (t.method == Method::kPut) {
    t.progress(static_cast<uint64_t>(ulnow), static_cast<uint64_t>(ultotal));
  } else {
    uint64_t offset = t.response.body_offset;
    uint64_t total = dltotal > 0 ? static_cast<uint64_t>(dltotal) + offset : 0;
    t.progress(static_cast<uint64_t>(dlnow) + offset, total);
  }
  return 0;
}

Status MapCurlError(CURLcode rc, const Active& a) {
  std::string detail = a.errbuf[0] != '\0' ? a.errbuf : curl_easy_strerror(rc);
  const std::string& url = a.t->url;
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Errorf(ErrorCode::kUnavailable, "{}: DNS lookup failed: {}", url, detail);
    case CURLE_COULDNT_CONNECT:
      return Errorf(ErrorCode::kUnavailable, "{}: cannot connect: {}", url, detail);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
      return Errorf(ErrorCode::kUnavailable, "{}: TLS failure: {}", url, detail);
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return Errorf(ErrorCode::kUnavailable, "{}: connection lost: {}", url, detail);
    case CURLE_OPERATION_TIMEDOUT:
      return Errorf(ErrorCode::kTimeout, "{}: timed out: {}", url, detail);
    case CURLE_PARTIAL_FILE:
      return Errorf(ErrorCode::kCorrupt, "{}: truncated transfer after {} bytes: {}", url,
                    a.t->response.bytes, detail);
    case CURLE_FILE_COULDNT_READ_FILE:
      return Errorf(ErrorCode::kNotFound, "{}: no such file", url);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return Errorf(ErrorCode::kInvalidArgument, "{}: {}", url, detail);
    default:
      return Errorf(ErrorCode::kFailed, "{}: {}", url, detail);
  }
}

// " (answered by http://cdn:443 after 1 redirect)" when redirects were
// followed, so an error status is not taken for the first server's; the
// origin only, since a presigned URL's path and query carry its signature.
std::string RedirectNote(Active& a) {
  long count = 0;
  char* effective = nullptr;
  curl_easy_getinfo(a.easy, CURLINFO_REDIRECT_COUNT, &count);
  curl_easy_getinfo(a.easy, CURLINFO_EFFECTIVE_URL, &effective);
  if (count <= 0 || effective == nullptr) return "";
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  std::string origin;
  if (u != nullptr && curl_url_set(u.get(), CURLUPART_URL, effective, 0) == CURLUE_OK &&
      curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    origin = fmt::format("{}://{}:{}", scheme, host, port);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  if (origin.empty()) return "";
  return fmt::format(" (answered by {} after {} redirect{})", origin, count, count == 1 ? "" : "s");
}

Status Finish(Active& a, CURLcode rc) {
  Transfer& t = *a.t;
  if (!a.callback_status.ok()) return a.callback_status;
  if (rc != CURLE_OK) return MapCurlError(rc, a);
  if (!a.started) {
    // HEAD, PUT, or a GET with an empty body: nothing called OnWrite.
    a.started = true;
    ReadResponseHead(a);
    if (t.method == Method::kGet && t.response.status < 400 && t.on_response) {
      BM_TRY(t.on_response(t.response));
    }
  } else {
    t.response.status = ResponseCode(a);
  }
  long code = t.response.status;
  if (code == 404 || code == 410) {
    return Errorf(ErrorCode::kNotFound, "{}: {}{}", t.url, DescribeHttpStatus(code),
                  RedirectNote(a));
  }
  if (code >= 400 || code < 100) {
    std::string body = a.error_text;
    std::replace(body.begin(), body.end(), '\n', ' ');
    return Errorf(ErrorCode::kFailed, "{}: {}{}{}{}", t.url, DescribeHttpStatus(code),
                  RedirectNote(a), body.empty() ? "" : ": ", body);
  }
  if (t.method == Method::kPut && t.response.bytes != t.upload_size) {
    return Errorf(ErrorCode::kFailed, "{}: sent {} of {} bytes", t.url, t.response.bytes,
                  t.upload_size);
  }
  return Status::Ok();
}

}  // namespace

std::string DescribeHttpStatus(long status) {
  static const std::map<long, const char*> kReasons = {{400, "Bad Request"},
                                                       {401, "Unauthorized"},
                                                       {403, "Forbidden"},
                                                       {404, "Not Found"},
                                                       {405, "Method Not Allowed"},
                                                       {408, "Request Timeout"},
                                                       {409, "Conflict"},
                                                       {410, "Gone"},
                                                       {411, "Length Required"},
                                                       {413, "Content Too Large"},
                                                       {416, "Range Not Satisfiable"},
                                                       {429, "Too Many Requests"},
                                                       {500, "Internal Server Error"},
                                                       {501, "Not Implemented"},
                                                       {502, "Bad Gateway"},
                                                       {503, "Service Unavailable"},
                                                       {504, "Gateway Timeout"},
                                                       {507, "Insufficient Storage"}};
  auto it = kReasons.find(status);
  return it == kReasons.end() ? fmt::format("HTTP {}", status)
                              : fmt::format("HTTP {} {}", status, it->second);
}

struct Client::Impl {
  CURLM* multi = nullptr;
  Impl() {
    GlobalInit();
    multi = curl_multi_init();
  }
  ~Impl() { curl_multi_cleanup(multi); }

  // Prepares `a` for `t`; an error means the transfer never starts.
  Status Setup(Active& a, Transfer& t, const ClientOptions& o) {
    a.t = &t;
    t.status = Status::Ok();
    t.response = Response{};
    a.file_url = IsFileUrl(t.url);
    if (a.file_url && t.method != Method::kPut) BM_TRY(CheckNotDirectory(t.url));
    a.easy = curl_easy_init();
    if (a.easy == nullptr) return Errorf(ErrorCode::kInternal, "curl_easy_init failed");
    CURL* e = a.easy;
    curl_easy_setopt(e, CURLOPT_URL, t.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &a);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, a.errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnWrite);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, kDownloadBuffer);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(o.connect_timeout_seconds * 1000));
    if (o.total_timeout_seconds > 0) {
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(o.total_timeout_seconds * 1000));
    }
    if (o.stall_seconds > 0 && o.stall_bytes_per_second > 0) {
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, o.stall_bytes_per_second);
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                       std::max(1L, static_cast<long>(o.stall_seconds + 0.5)));
    }
    if (!o.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, o.ca_file.c_str());
    if (!o.client_cert.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, o.client_cert.c_str());
    if (!o.client_key.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, o.client_key.c_str());
    for (const std::string& h : o.headers) a.headers = curl_slist_append(a.headers, h.c_str());
    if (t.method == Method::kGet && t.range_start > 0 && !t.if_range.empty()) {
      std::string h = "If-Range: " + t.if_range;
      a.headers = curl_slist_append(a.headers, h.c_str());
    }
    if (!o.bearer_token.empty()) {
      std::string h = "Authorization: Bearer " + o.bearer_token;
      a.headers = curl_slist_append(a.headers, h.c_str());
    }
    if (a.headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, a.headers);
    a.stall_seconds = o.stall_seconds;
    if (t.progress || o.stall_seconds > 0) {
      curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, OnProgress);
      curl_easy_setopt(e, CURLOPT_XFERINFODATA, &a);
    }
    switch (t.method) {
      case Method::kHead:
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        break;
      case Method::kGet:
        if (!t.sink) return Errorf(ErrorCode::kInternal, "GET {} without a sink", t.url);
        if (t.range_start > 0) {
          std::string range = fmt::format("{}-", t.range_start);
          curl_easy_setopt(e, CURLOPT_RANGE, range.c_str());  // libcurl copies it
        }
        break;
      case Method::kPut: {
        if (!t.upload_path.empty()) {
          a.fd = open(t.upload_path.c_str(), O_RDONLY | O_CLOEXEC);
          struct stat st;
          if (a.fd < 0 || fstat(a.fd, &st) != 0) {
            return Errorf(ErrorCode::kIo, "opening {}: {}", t.upload_path, strerror(errno));
          }
          t.upload_size = static_cast<uint64_t>(st.st_size);
          posix_fadvise(a.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        } else if (!t.source) {
          return Errorf(ErrorCode::kInternal, "PUT {} without a body", t.url);
        }
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBuffer);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t.upload_size));
        curl_easy_setopt(e, CURLOPT_READFUNCTION, OnRead);
        curl_easy_setopt(e, CURLOPT_READDATA, &a);
        break;
      }
    }
    return Status::Ok();
  }
};

Client::Client(ClientOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

Client::~Client() = default;

Status Client::Run(Transfer& transfer) { return RunAll({&transfer}, 1); }

Status Client::RunAll(const std::vector<Transfer*>& transfers, int max_parallel) {
  max_parallel = std::max(1, max_parallel);
  std::map<CURL*, std::unique_ptr<Active>> running;
  size_t next = 0;
  while (next < transfers.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < max_parallel && next < transfers.size()) {
      Transfer& t = *transfers[next++];
      auto a = std::make_unique<Active>();
      Status s = impl_->Setup(*a, t, options_);
      if (!s.ok()) {
        t.status = s;
        continue;
      }
      curl_multi_add_handle(impl_->multi, a->easy);
      running.emplace(a->easy, std::move(a));
    }
    int still_running = 0;
    CURLMcode mc = curl_multi_perform(impl_->multi, &still_running);
    if (mc != CURLM_OK) {
      Status s = Errorf(ErrorCode::kInternal, "curl_multi_perform: {}", curl_multi_strerror(mc));
      for (auto& [easy, a] : running) {
        curl_multi_remove_handle(impl_->multi, easy);
        a->t->status = s;
      }
      running.clear();
      for (; next < transfers.size(); ++next) transfers[next]->status = s;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(impl_->multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      auto it = running.find(msg->easy_handle);
      if (it == running.end()) continue;
      Active& a = *it->second;
      a.t->status = Finish(a, msg->data.result);
      curl_multi_remove_handle(impl_->multi, a.easy);
      running.erase(it);
    }
    if (!running.empty() && still_running > 0) {
      curl_multi_poll(impl_->multi, nullptr, 0, 1000, nullptr);
    }
  }
  for (Transfer* t : transfers) {
    if (!t->status.ok()) return t->status;
  }
  return Status::Ok();
}

Result<Response> Client::Head(const std::string& url) {
  Transfer t;
  t.method = Method::kHead;
  t.url = url;
  BM_TRY(Run(t));
  return t.response;
}

Result<Response> Client::Get(const std::string& url, Sink sink, uint64_t range_start,
                             Progress progress) {
  Transfer t;
  t.url = url;
  t.sink = std::move(sink);
  t.range_start = range_start;
  t.progress = std::move(progress);
  BM_TRY(Run(t));
  return t.response;
}

Result<Response> Client::PutFile(const std::string& url, const std::string& path,
                                 Progress progress) {
  Transfer t;
  t.method = Method::kPut;
  t.url = url;
  t.upload_path = path;
  t.progress = std::move(progress);
  BM_TRY(Run(t));
  return t.response;
}

Result<Response> Client::Put(const std::string& url, Source source, uint64_t size,
                             Progress progress) {
  Transfer t;
  t.method = Method::kPut;
  t.url = url;
  t.source = std::move(source);
  t.upload_size = size;
  t.progress = std::move(progress);
  BM_TRY(Run(t));
  return t.response;
}

}  // namespace bm::http
