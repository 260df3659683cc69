#include "engine/gpu_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace bm::engine {

std::string GpuLease::VisibleDevices() const {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

std::string GpuLockDir() {
  if (const char* d = std::getenv("BENCHMAKE_GPU_LOCK_DIR"); d && *d) return d;
  return "/tmp/benchmake-gpus-" + std::to_string(::getuid());
}

Result<GpuLease> AcquireGpus(int count, int total, const std::string& lock_dir,
                             std::ostream* notice) {
  if (count > total) {
    return Errorf(ErrorCode::kInvalidArgument, "step needs {} GPU(s) but this machine has {}",
                  count, total);
  }
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  bool said = false;
  auto say_waiting = [&] {
    if (!said && notice)
      *notice << "benchmake: waiting for " << count << " free GPU(s) (locks in " << lock_dir
              << ")\n";
    said = true;
  };
  const std::string turn_path = lock_dir + "/acquire.lock";
  FileLock turn;
  BM_ASSIGN_OR_RETURN(bool my_turn, FileLock::TryLock(turn_path, &turn));
  if (!my_turn) {
    say_waiting();
    BM_ASSIGN_OR_RETURN(turn, FileLock::Lock(turn_path));
  }
  std::vector<std::pair<int, FileLock>> held;
  std::vector<bool> mine(static_cast<size_t>(total), false);
  for (;;) {
    for (int id = 0; id < total && static_cast<int>(held.size()) < count; ++id) {
      if (mine[static_cast<size_t>(id)]) continue;
      FileLock lock;
      BM_ASSIGN_OR_RETURN(bool got,
                          FileLock::TryLock(fmt::format("{}/gpu{}.lock", lock_dir, id), &lock));
      if (!got) continue;
      mine[static_cast<size_t>(id)] = true;
      held.emplace_back(id, std::move(lock));
    }
    if (static_cast<int>(held.size()) == count) break;
    say_waiting();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::sort(held.begin(), held.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  GpuLease lease;
  for (auto& [id, lock] : held) {
    lease.ids.push_back(id);
    lease.locks.push_back(std::move(lock));
  }
  return lease;  // `turn` is released: the next acquirer may gather
}

}  // namespace bm::engine
