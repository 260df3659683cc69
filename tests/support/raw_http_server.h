// RawHttpServer: a misbehaving HTTP server on 127.0.0.1 for failure-path tests.
// For every connection it reads the request head, writes `reply` verbatim, and
// then either closes the connection or, with hold_open, keeps it silent until
// the server is destroyed — a truncated body, a stalled body, or garbage.
// With reply empty and hold_open set it never answers at all.
//
// Not thread-safe; serves connections on its own thread until destroyed.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"

namespace bm::testing {

class RawHttpServer {
 public:
  RawHttpServer(std::string reply, bool hold_open);
  ~RawHttpServer();
  RawHttpServer(const RawHttpServer&) = delete;
  RawHttpServer& operator=(const RawHttpServer&) = delete;

  // OK once listening; check before use.
  const Status& status() const { return status_; }
  std::string Url(const std::string& path = "") const;
  int connections() const { return connections_.load(); }

 private:
  void Serve();

  std::string reply_;
  bool hold_open_;
  Status status_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<int> held_;
  std::thread thread_;
};

}  // namespace bm::testing
