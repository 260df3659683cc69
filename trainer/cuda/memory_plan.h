// MemoryPlan and DeviceArena: all device memory of a training run comes from one
// cudaMalloc (never managed memory), carved up by a plan made before anything is allocated.
//
//   MemoryPlan plan;
//   size_t w = plan.Add("params.fp32", n * 4);      // offsets, 256-byte aligned
//   BM_ASSIGN_OR_RETURN(auto arena, DeviceArena::Create(plan));
//   float* p = arena->At<float>(w);
//
// The plan is the peak: nothing is allocated on the device after the arena (cuBLASLt's
// workspace is an entry of the plan too). PeakReport() adds what cudaMemGetInfo says the
// process holds beyond the arena (CUDA context, library handles).
//
// Entries never live at the same time share storage through a shared region of parts:
//
//   plan.BeginShared("scratch");             // part 1 starts at the region's start
//   size_t a = plan.Add("layer temp", ...);
//   plan.NextPart();                         // part 2 starts there again
//   size_t b = plan.Add("head temp", ...);
//   plan.EndShared();                        // the region takes its largest part's bytes
//
// Thread safety: none; one arena per training run.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/dist/communicator.h"

namespace bm::train::cuda {

class MemoryPlan {
 public:
  struct Entry {
    std::string name;
    size_t offset;
    size_t bytes;
  };
  static constexpr size_t kAlign = 256;
  static size_t Aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

  // Reserves `bytes` (rounded up to kAlign) and returns its offset.
  size_t Add(std::string name, size_t bytes);
  // A shared region (above); regions do not nest.
  void BeginShared(std::string region);
  void NextPart();
  void EndShared();
  // Inside a shared region: whether `bytes` more in the current part leave the region no larger
  // than its earlier parts made it.
  bool PartFits(size_t bytes) const;
  size_t total() const { return total_; }
  const std::vector<Entry>& entries() const { return entries_; }
  // One line per entry, largest first, in MiB (a shared region's entries named after it).
  std::string Summary() const;

 private:
  std::vector<Entry> entries_;
  size_t total_ = 0;
  std::string region_;  // the open shared region's name; empty outside one
  size_t region_begin_ = 0, region_end_ = 0;
};

// Places items of `bytes` each from `start` upward, item i ending at or below limits[i] (the
// limits must not fall): each item that still fits is taken, which places the most. Returns
// each item's offset, or nullopt for one left out.
std::vector<std::optional<size_t>> PackUnderLimits(size_t start, size_t bytes,
                                                   const std::vector<size_t>& limits);

class DeviceArena {
 public:
  // Allocates plan.total() bytes on the current device with one cudaMalloc, or, given a group
  // of several ranks, as that group's window (Communicator::AllocateWindow: NCCL's symmetric
  // memory, which its collectives on the arena's buffers may use; collective over the group).
  // The group must outlive the arena.
  static Result<std::unique_ptr<DeviceArena>> Create(const MemoryPlan& plan,
                                                     dist::Communicator* window_group = nullptr);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  template <typename T>
  T* At(size_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }
  size_t bytes() const { return bytes_; }
  // Device memory this process uses now by cudaMemGetInfo (total - free), in bytes.
  static Result<size_t> DeviceUsedBytes();

 private:
  DeviceArena(char* base, size_t bytes, std::unique_ptr<dist::WindowMemory> window = nullptr)
      : base_(base), bytes_(bytes), window_(std::move(window)) {}
  char* base_;
  size_t bytes_;
  std::unique_ptr<dist::WindowMemory> window_;  // the memory, when it is a window
};

}  // namespace bm::train::cuda
