// Exact checks of every collective of a Communicator, shared by the Gloo
// tests (host buffers) and the NCCL tests (device buffers): the same inputs
// and expected values, moved to where the communicator wants its buffers.
//
// Rank r's element i is ((7i + 3r) mod 16) - 5, a small integer, so that
// sums over up to 16 ranks and maxima are exact in every dtype (bf16 holds
// integers up to 256 exactly) whatever the reduction order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/dist/communicator.h"

namespace bm::train::dist::testing {

inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                       DType::kFloat64, DType::kInt64};
// Empty, single, odd, a power of two, and a count no rank count divides.
inline constexpr int64_t kCounts[] = {0, 1, 2, 3, 5, 64, 1001};

// A host array of one dtype, read and written as doubles.
class Values {
 public:
  Values(DType dtype, int64_t count);
  void Set(int64_t i, double v);
  double Get(int64_t i) const;
  DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  size_t bytes() const { return bytes_.size(); }

 private:
  DType dtype_;
  int64_t count_;
  std::vector<unsigned char> bytes_;
};

// Where the communicator's buffers live. Buffers live as long as the object.
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* Upload(const Values& values) = 0;  // a new buffer holding `values`
  // The buffer's contents once the operations queued on stream() are done.
  virtual Values Download(const void* buffer, DType dtype, int64_t count) = 0;
  virtual void* stream() { return nullptr; }
};

std::unique_ptr<Memory> HostMemory();

// AllReduce (sum, max), ReduceScatter (sum, max), AllGather (apart and in
// place) and Broadcast from every root, with `count` elements per rank;
// "" when all are exact, else what differed.
std::string CheckCollectives(Communicator& c, DType dtype, int64_t count, Memory& memory);

}  // namespace bm::train::dist::testing
