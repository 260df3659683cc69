#include "engine/gpu_allocator.h"

#include <unistd.h>

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
  for (;;) {
    GpuLease lease;
    for (int id = 0; id < total && static_cast<int>(lease.ids.size()) < count; ++id) {
      FileLock lock;
      BM_ASSIGN_OR_RETURN(bool got,
                          FileLock::TryLock(fmt::format("{}/gpu{}.lock", lock_dir, id), &lock));
      if (got) {
        lease.ids.push_back(id);
        lease.locks.push_back(std::move(lock));
      }
    }
    if (static_cast<int>(lease.ids.size()) == count) return lease;
    if (!said && notice) {
      *notice << "benchmake: waiting for " << count << " free GPU(s) (locks in " << lock_dir
              << ")\n";
      said = true;
    }
    lease = GpuLease();  // release what we took before waiting
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace bm::engine
