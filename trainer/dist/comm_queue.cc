#include "trainer/dist/comm_queue.h"

#include <chrono>

namespace bm::train::dist {

CommQueue::CommQueue() : thread_([this] { Work(); }) {}

CommQueue::~CommQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

CommQueue::Ticket CommQueue::Submit(std::function<Status()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.emplace_back(++submitted_, std::move(task));
  cv_.notify_all();
  return submitted_;
}

Status CommQueue::Wait(Ticket ticket) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ >= ticket; });
  waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return error_;
}

Status CommQueue::Drain() {
  Ticket last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = submitted_;
  }
  return Wait(last);
}

void CommQueue::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_ and nothing left
    auto [ticket, task] = std::move(tasks_.front());
    tasks_.pop_front();
    const bool skip = !error_.ok();
    lock.unlock();
    Status s = skip ? Status::Ok() : task();
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = std::move(s);
    done_ = ticket;
    cv_.notify_all();
  }
}

}  // namespace bm::train::dist
