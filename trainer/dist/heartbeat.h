// A rank's heartbeat: while a rank of several lives, a thread of its own
// touches RENDEZVOUS/heartbeat/rank-K every second (the file holds the rank's
// pid). When a run fails, the launcher compares the files' mtimes: a rank whose
// heartbeat stopped well before the others' was frozen (stopped by a signal,
// its machine gone) and is the one the others waited for, whichever rank's
// collective timed out first (rules/launch/launcher.h, FindUnresponsiveRanks).
// A rank that is alive but stuck keeps beating: a heartbeat tells a frozen
// process, not a deadlock.
//
// Thread safety: the thread touches only its own file.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace bm::train::dist {

inline constexpr double kHeartbeatIntervalS = 1.0;

// RENDEZVOUS/heartbeat/rank-K
std::string HeartbeatPath(const std::string& rendezvous, int rank);

class Heartbeat {
 public:
  // Creates the file (holding this process's pid) and starts beating. A file
  // that cannot be written leaves the heartbeat off: it only explains failures.
  Heartbeat(const std::string& rendezvous, int rank);
  ~Heartbeat();  // stops the thread
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  void Beat();

  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace bm::train::dist
