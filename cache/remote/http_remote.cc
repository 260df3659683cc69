#include "cache/remote/http_remote.h"

#include "cache/remote/blob_sink.h"
#include "cache/remote/remote_config.h"

namespace bm::cache {
namespace {

// Builds the GET transfer for one fetch into `sink`.
http::Transfer MakeGet(const std::string& url, BlobSink& sink) {
  http::Transfer t;
  t.method = http::Method::kGet;
  t.url = url;
  t.sink = [&sink](const char* p, size_t n) { return sink.Write(p, n); };
  return t;
}

// A transfer's outcome as RemoteBackend::Get reports it; finishes the sink.
Result<bool> FinishGet(const Status& transfer_status, BlobSink& sink) {
  if (transfer_status.code() == ErrorCode::kNotFound) {
    sink.Discard();
    return false;
  }
  if (!transfer_status.ok()) {
    sink.Discard();
    return transfer_status;
  }
  BM_TRY(sink.Finish());
  return true;
}

}  // namespace

HttpRemote::HttpRemote(std::string base_url, http::ClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

std::string HttpRemote::url() const { return RedactUrl(base_url_); }

std::string HttpRemote::KeyUrl(Namespace ns, const Digest& key) const {
  return base_url_ + "/" + std::string(NamespaceName(ns)) + "/" + key.Hex();
}

std::unique_ptr<http::Client> HttpRemote::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<http::Client> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return std::make_unique<http::Client>(options_);
}

void HttpRemote::Release(std::unique_ptr<http::Client> client) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(client));
}

Result<bool> HttpRemote::Get(Namespace ns, const Digest& key, const std::string& dest_path) {
  std::vector<Result<bool>> r = GetMany({RemoteFetch{ns, key, dest_path}}, 1);
  return r.front();
}

std::vector<Result<bool>> HttpRemote::GetMany(const std::vector<RemoteFetch>& fetches,
                                              int max_parallel) {
  std::vector<std::unique_ptr<BlobSink>> sinks;
  std::vector<http::Transfer> transfers;
  std::vector<Status> open_status;
  sinks.reserve(fetches.size());
  transfers.reserve(fetches.size());
  for (const RemoteFetch& f : fetches) {
    sinks.push_back(std::make_unique<BlobSink>(f.ns, f.key, f.dest_path));
    open_status.push_back(sinks.back()->Open());
    transfers.push_back(MakeGet(KeyUrl(f.ns, f.key), *sinks.back()));
  }
  std::vector<http::Transfer*> runnable;
  for (size_t i = 0; i < transfers.size(); ++i) {
    if (open_status[i].ok()) runnable.push_back(&transfers[i]);
  }
  std::unique_ptr<http::Client> client = Acquire();
  (void)client->RunAll(runnable, max_parallel);  // each transfer keeps its own status
  Release(std::move(client));
  std::vector<Result<bool>> results;
  results.reserve(fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (!open_status[i].ok()) {
      results.push_back(open_status[i]);
      continue;
    }
    results.push_back(FinishGet(transfers[i].status, *sinks[i]));
  }
  return results;
}

Status HttpRemote::Put(Namespace ns, const Digest& key, const std::string& src_path) {
  return PutMany({RemotePush{ns, key, src_path}}, 1).front();
}

std::vector<Status> HttpRemote::PutMany(const std::vector<RemotePush>& pushes, int max_parallel) {
  std::vector<http::Transfer> transfers(pushes.size());
  std::vector<http::Transfer*> all;
  for (size_t i = 0; i < pushes.size(); ++i) {
    transfers[i].method = http::Method::kPut;
    transfers[i].url = KeyUrl(pushes[i].ns, pushes[i].key);
    transfers[i].upload_path = pushes[i].src_path;
    all.push_back(&transfers[i]);
  }
  std::unique_ptr<http::Client> client = Acquire();
  (void)client->RunAll(all, max_parallel);
  Release(std::move(client));
  std::vector<Status> results;
  results.reserve(pushes.size());
  for (const http::Transfer& t : transfers) results.push_back(t.status);
  return results;
}

Result<bool> HttpRemote::Exists(Namespace ns, const Digest& key) {
  std::unique_ptr<http::Client> client = Acquire();
  Result<http::Response> r = client->Head(KeyUrl(ns, key));
  Release(std::move(client));
  if (r.ok()) return true;
  if (r.status().code() == ErrorCode::kNotFound) return false;
  return r.status();
}

}  // namespace bm::cache
