#include "tests/trainer/collective_checks.h"

#include <algorithm>
#include <cstring>
#include <list>

#include "tests/trainer/multi_rank.h"

namespace bm::train::dist::testing {

Values::Values(DType dtype, int64_t count)
    : dtype_(dtype), count_(count), bytes_(static_cast<size_t>(count) * DTypeSize(dtype)) {}

void Values::Set(int64_t i, double v) {
  unsigned char* p = bytes_.data() + static_cast<size_t>(i) * DTypeSize(dtype_);
  switch (dtype_) {
    case DType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::kBFloat16: {  // the values used are exact in bf16: truncation is exact
      const float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      const uint16_t h = static_cast<uint16_t>(u >> 16);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::kFloat16: {
      const _Float16 h = static_cast<_Float16>(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::kFloat64:
      std::memcpy(p, &v, 8);
      break;
    case DType::kInt64: {
      const int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
  }
}

double Values::Get(int64_t i) const {
  const unsigned char* p = bytes_.data() + static_cast<size_t>(i) * DTypeSize(dtype_);
  switch (dtype_) {
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case DType::kFloat16: {
      _Float16 h;
      std::memcpy(&h, p, 2);
      return static_cast<double>(h);
    }
    case DType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DType::kInt64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
  }
  return 0;
}

namespace {

class Host final : public Memory {
 public:
  void* Upload(const Values& values) override {
    buffers_.emplace_back(static_cast<const unsigned char*>(values.data()),
                          static_cast<const unsigned char*>(values.data()) + values.bytes());
    buffers_.back().resize(std::max<size_t>(values.bytes(), 1));
    return buffers_.back().data();
  }
  Values Download(const void* buffer, DType dtype, int64_t count) override {
    Values v(dtype, count);
    if (v.bytes() > 0) std::memcpy(v.data(), buffer, v.bytes());  // a count of 0 has no buffer
    return v;
  }

 private:
  std::list<std::vector<unsigned char>> buffers_;
};

double Input(int rank, int64_t i) { return static_cast<double>((i * 7 + rank * 3) % 16) - 5; }

double Reduced(int ranks, int64_t i, ReduceOp op) {
  double out = Input(0, i);
  for (int r = 1; r < ranks; ++r)
    out = op == ReduceOp::kSum ? out + Input(r, i) : std::max(out, Input(r, i));
  return out;
}

Values Inputs(DType dtype, int rank, int64_t count, int64_t offset = 0) {
  Values v(dtype, count);
  for (int64_t i = 0; i < count; ++i) v.Set(i, Input(rank, offset + i));
  return v;
}

std::string_view OpName(ReduceOp op) { return op == ReduceOp::kSum ? "sum" : "max"; }

}  // namespace

std::unique_ptr<Memory> HostMemory() { return std::make_unique<Host>(); }

std::string CheckCollectives(Communicator& c, DType dtype, int64_t count, Memory& memory) {
  const int n = c.size();
  const int me = c.rank();
  const std::string_view type = DTypeName(dtype);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    void* data = memory.Upload(Inputs(dtype, me, count));
    RANK_OK(c.AllReduce(data, count, dtype, op, memory.stream()));
    const Values got = memory.Download(data, dtype, count);
    for (int64_t i = 0; i < count; ++i)
      RANK_CHECK(got.Get(i) == Reduced(n, i, op), "AllReduce {} of {} {}: element {} is {}",
                 OpName(op), count, type, i, got.Get(i));

    // ReduceScatter into a buffer of its own, and in place into this rank's block.
    for (bool in_place : {false, true}) {
      void* send = memory.Upload(Inputs(dtype, me, count * n));
      void* recv = in_place ? static_cast<unsigned char*>(send) + me * count * DTypeSize(dtype)
                            : memory.Upload(Values(dtype, count));
      RANK_OK(c.ReduceScatter(send, recv, count, dtype, op, memory.stream()));
      const Values block = memory.Download(recv, dtype, count);
      for (int64_t i = 0; i < count; ++i)
        RANK_CHECK(block.Get(i) == Reduced(n, me * count + i, op),
                   "ReduceScatter {} ({}) of {} {}: element {} is {}", OpName(op),
                   in_place ? "in place" : "apart", count, type, i, block.Get(i));
    }
  }

  // AllGather from a buffer of its own, and in place from this rank's block.
  for (bool in_place : {false, true}) {
    Values start(dtype, count * n);
    if (in_place)
      for (int64_t i = 0; i < count; ++i) start.Set(me * count + i, Input(me, i));
    void* recv = memory.Upload(start);
    const void* send = in_place ? static_cast<unsigned char*>(recv) + me * count * DTypeSize(dtype)
                                : memory.Upload(Inputs(dtype, me, count));
    RANK_OK(c.AllGather(send, recv, count, dtype, memory.stream()));
    const Values all = memory.Download(recv, dtype, count * n);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        RANK_CHECK(all.Get(r * count + i) == Input(r, i),
                   "AllGather ({}) of {} {}: rank {}'s element {} is {}",
                   in_place ? "in place" : "apart", count, type, r, i, all.Get(r * count + i));
  }

  for (int root = 0; root < n; ++root) {
    void* data = memory.Upload(Inputs(dtype, me, count));
    RANK_OK(c.Broadcast(data, count, dtype, root, memory.stream()));
    const Values got = memory.Download(data, dtype, count);
    for (int64_t i = 0; i < count; ++i)
      RANK_CHECK(got.Get(i) == Input(root, i), "Broadcast from {} of {} {}: element {} is {}", root,
                 count, type, i, got.Get(i));
  }
  return "";
}

}  // namespace bm::train::dist::testing
