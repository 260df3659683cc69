#include "trainer/cuda/memory_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "trainer/cuda/check.h"

namespace bm::train::cuda {

size_t MemoryPlan::Add(std::string name, size_t bytes) {
  size_t offset = total_;
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (!region_.empty()) name = fmt::format("{} (shared: {})", name, region_);
  entries_.push_back({std::move(name), offset, bytes});
  total_ += rounded;
  return offset;
}

void MemoryPlan::BeginShared(std::string region) {
  region_ = std::move(region);
  region_begin_ = region_end_ = total_;
}

void MemoryPlan::NextPart() {
  region_end_ = std::max(region_end_, total_);
  total_ = region_begin_;
}

bool MemoryPlan::PartFits(size_t bytes) const {
  return total_ + (bytes + kAlign - 1) / kAlign * kAlign <= region_end_;
}

void MemoryPlan::EndShared() {
  total_ = std::max(region_end_, total_);
  region_.clear();
}

std::string MemoryPlan::Summary() const {
  std::vector<Entry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry& a, const Entry& b) { return a.bytes > b.bytes; });
  std::string out =
      fmt::format("memory plan: {:.1f} MiB in {} entries\n", total_ / 1048576.0, entries_.size());
  for (const Entry& e : sorted)  // (exact bytes under 1 MiB, where 0.1 MiB would hide them)
    out += e.bytes < 1048576 ? fmt::format("  {:>10} B    {}\n", e.bytes, e.name)
                             : fmt::format("  {:>10.1f} MiB  {}\n", e.bytes / 1048576.0, e.name);
  return out;
}

std::vector<std::optional<size_t>> PackUnderLimits(size_t start, size_t bytes,
                                                   const std::vector<size_t>& limits) {
  std::vector<std::optional<size_t>> at(limits.size());
  for (size_t i = 0; i < limits.size(); ++i) {
    if (start + bytes > limits[i]) continue;
    at[i] = start;
    start += bytes;
  }
  return at;
}

Result<std::unique_ptr<DeviceArena>> DeviceArena::Create(const MemoryPlan& plan,
                                                         dist::Communicator* window_group) {
  size_t bytes = std::max<size_t>(plan.total(), MemoryPlan::kAlign);
  if (window_group != nullptr && window_group->size() > 1) {
    Result<std::unique_ptr<dist::WindowMemory>> window = window_group->AllocateWindow(bytes);
    if (!window.ok())
      return window.status().WithContext(
          fmt::format("device arena of {:.1f} MiB as a window", bytes / 1048576.0));
    char* base = (*window)->data();
    return std::unique_ptr<DeviceArena>(new DeviceArena(base, bytes, std::move(*window)));
  }
  void* base = nullptr;
  BM_CUDA_CHECK(cudaMalloc(&base, bytes), "device arena of {:.1f} MiB", bytes / 1048576.0);
  return std::unique_ptr<DeviceArena>(new DeviceArena(static_cast<char*>(base), bytes));
}

DeviceArena::~DeviceArena() {
  if (window_ == nullptr) cudaFree(base_);  // a window frees itself
}

Result<size_t> DeviceArena::DeviceUsedBytes() {
  size_t free_bytes = 0, total_bytes = 0;
  BM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes), "memory info");
  return total_bytes - free_bytes;
}

}  // namespace bm::train::cuda
