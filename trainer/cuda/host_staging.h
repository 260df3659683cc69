// HostStaging: long copies of fp32 values between the host and the device through two pinned
// chunks, where the host's side is a function over ranges rather than one buffer: the values
// are produced (drawn, cut from a larger model) or consumed (placed into the trainer's layout)
// a chunk at a time, and the host's work on one chunk overlaps the copy of the other. No
// pageable buffer of the whole range is ever made, so a rank that holds a slice of a 7B model
// never holds the model on the host (cuda_data_parallel.h's Set/GetParameters).
//
//   HostStaging staging;
//   BM_TRY(staging.Init(stream));
//   BM_TRY(staging.Upload(fill, first, n, device_dst));    // fill(first + i, chunk) ...
//   BM_TRY(staging.Download(device_src, n, first, take));  // take(first + i, chunk) ...
//
// Each call returns after its last copy is done. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <span>

#include "base/result.h"

namespace bm::train::cuda {

// Fills `out` with the values [begin, begin + out.size()) of a flat range.
using RangeSource = std::function<void(size_t begin, std::span<float> out)>;
// Takes the values [begin, begin + values.size()).
using RangeSink = std::function<void(size_t begin, std::span<const float> values)>;

class HostStaging {
 public:
  // Floats per chunk (two chunks, 64 MiB each when pinned).
  static constexpr size_t kChunk = size_t{1} << 24;

  HostStaging() = default;
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Pins the two chunks of min(kChunk, largest) floats: `largest`, the longest copy to come
  // (a small model pins little); copies run on `stream`.
  Status Init(cudaStream_t stream, size_t largest = kChunk);

  // dst[i] = the source's value first + i, for i < n.
  Status Upload(const RangeSource& fill, size_t first, size_t n, float* dst);
  // take(first + i, ...) receives src[i], for i < n, in order.
  Status Download(const float* src, size_t n, size_t first, const RangeSink& take);

 private:
  cudaStream_t stream_ = nullptr;
  size_t chunk_ = 0;
  float* host_[2] = {nullptr, nullptr};
  cudaEvent_t copied_[2] = {nullptr, nullptr};
};

}  // namespace bm::train::cuda
