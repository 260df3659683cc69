// CommQueue: the communication "stream" of a host backend. Tasks (usually
// collectives on a Communicator) run one at a time, in submission order, on one
// thread of their own, so the caller keeps computing while they run — the CPU
// twin of issuing NCCL work on a CUDA stream of its own. Because every rank
// submits the same collectives in the same order, the order on the wire is the
// same on every rank whatever the timing.
//
//   CommQueue q;
//   CommQueue::Ticket t = q.Submit([&] { return comm->AllReduce(...); });
//   ... compute ...
//   BM_TRY(q.Wait(t));      // t and everything submitted before it are done
//
// Errors are sticky: once a task fails, later tasks are not run, and every
// Wait/Drain returns that first error. waited_s() is the time callers spent
// blocked in Wait/Drain: the communication the computation did not hide.
// Thread safety: Submit/Wait/Drain from one thread (the backend's).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "base/result.h"

namespace bm::train::dist {

class CommQueue {
 public:
  using Ticket = int64_t;

  CommQueue();
  ~CommQueue();  // waits for the queued tasks, then joins the thread
  CommQueue(const CommQueue&) = delete;
  CommQueue& operator=(const CommQueue&) = delete;

  Ticket Submit(std::function<Status()> task);
  Status Wait(Ticket ticket);
  Status Drain();  // waits for everything submitted so far

  double waited_s() const { return waited_s_; }
  void ResetWaited() { waited_s_ = 0; }

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Ticket, std::function<Status()>>> tasks_;
  Ticket submitted_ = 0;  // tickets 1..submitted_ were handed out
  Ticket done_ = 0;       // tickets 1..done_ have finished (or were skipped)
  Status error_;          // the first failure
  bool stop_ = false;
  double waited_s_ = 0;
  std::thread thread_;
};

}  // namespace bm::train::dist
