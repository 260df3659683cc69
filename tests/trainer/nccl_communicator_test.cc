// The NCCL communicator on real GPUs, every test in forked ranks (the parent
// never touches CUDA, so its children can). Without a GPU each test skips
// and says so; the multi-GPU tests skip on a machine with fewer than two.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "tests/trainer/collective_checks.h"
#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/multi_rank.h"
#include "trainer/dist/process_groups.h"

namespace bm::train::dist {
namespace {

using testing::AllRanksPassed;
using testing::EnvOf;
using testing::Memory;
using testing::RankOutcome;
using testing::RankResult;
using testing::RunRanks;
using testing::TempDir;
using testing::Values;

// Device buffers, copied with cudaMemcpy on the legacy default stream, which
// the communicator's operations (stream nullptr) are ordered with.
class DeviceMemory final : public Memory {
 public:
  ~DeviceMemory() override {
    for (void* p : buffers_) cudaFree(p);
  }
  void* Upload(const Values& values) override {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(values.bytes(), 1)) != cudaSuccess) return nullptr;
    buffers_.push_back(p);
    cudaMemcpy(p, values.data(), values.bytes(), cudaMemcpyHostToDevice);
    return p;
  }
  Values Download(const void* buffer, DType dtype, int64_t count) override {
    Values v(dtype, count);
    cudaMemcpy(v.data(), buffer, v.bytes(), cudaMemcpyDeviceToHost);
    return v;
  }

 private:
  std::vector<void*> buffers_;
};

// Rank-side: "" when this rank can run a test needing `gpus` devices, else why not.
std::string CannotRun(int gpus) {
  std::string reason = cuda::testing::NoDeviceReason();
  if (!reason.empty()) return reason;
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < gpus) return fmt::format("{} GPU(s), the test needs {}", count, gpus);
  return "";
}

// The number of GPUs, or why there are none; asked in a child, so that the
// parent stays free of CUDA.
struct Gpus {
  int count = 0;
  std::string why_not;
  std::string Shortfall(int need) const {
    return why_not.empty() ? fmt::format("{} GPU(s), the test needs {}", count, need) : why_not;
  }
};
Gpus CountGpus() {
  auto probe = RunRanks(1, 60, [](int) {
    RankResult r;
    r.skip = cuda::testing::NoDeviceReason();
    int count = 0;
    if (r.skip.empty() && cudaGetDeviceCount(&count) == cudaSuccess)
      r.output = std::to_string(count);
    return r;
  });
  const RankResult& r = probe[0].result;
  if (r.output.empty()) return {0, r.skip.empty() ? "the GPU probe failed" : r.skip};
  return {std::stoi(r.output), ""};
}

// GTEST_SKIP when any rank could not run.
#define SKIP_IF_RANKS_SKIPPED(outcomes) \
  for (const RankOutcome& o : outcomes) \
    if (!o.result.skip.empty()) GTEST_SKIP() << "GPU test skipped: " << o.result.skip

// Random values of a dtype, finite (no NaN or infinity bit patterns).
Values RandomValues(DType dtype, int64_t count, uint64_t seed) {
  Values v(dtype, count);
  std::mt19937_64 rng(seed);
  auto* bytes = static_cast<unsigned char*>(v.data());
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = rng();
    switch (dtype) {
      case DType::kFloat32:
        bits &= ~(uint64_t{1} << 30);  // top exponent bit clear: finite
        break;
      case DType::kBFloat16:
        bits &= ~(uint64_t{1} << 14);
        break;
      case DType::kFloat16:
        bits &= ~(uint64_t{1} << 14);
        break;
      case DType::kFloat64:
        bits &= ~(uint64_t{1} << 62);
        break;
      case DType::kInt64:
        break;
    }
    std::memcpy(bytes + static_cast<size_t>(i) * DTypeSize(dtype), &bits, DTypeSize(dtype));
  }
  return v;
}

TEST(NcclCommunicatorTest, OneRankCollectivesReturnTheInputBitForBit) {
  auto outcomes = RunRanks(1, 120, [](int) -> RankResult {
    RankResult skip;
    if (skip.skip = CannotRun(1); !skip.skip.empty()) return skip;
    // A world of one forced onto NCCL: what a one-GPU run with the
    // communicator does, which must equal the run without it.
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(0, 1, "", 60), 1, 1, 1, Transport::kNccl, 0, true);
    RANK_OK(g.status());
    Communicator& c = *g->world;
    RANK_CHECK(c.transport() == "nccl" && c.device() && c.size() == 1, "{}", c.transport());
    RANK_CHECK(g->dp->transport() == "nccl", "{}", "the dp group is not NCCL");
    for (DType dtype : testing::kAllDTypes) {
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1001}, int64_t{1} << 20}) {
        DeviceMemory memory;
        const Values in = RandomValues(dtype, count, 7 + static_cast<uint64_t>(count));
        auto same = [&](const void* buffer, std::string_view op) -> std::string {
          const Values out = memory.Download(buffer, dtype, count);
          RANK_CHECK(std::memcmp(out.data(), in.data(), in.bytes()) == 0, "{} of {} {}", op, count,
                     DTypeName(dtype));
          return "";
        };
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          void* data = memory.Upload(in);
          RANK_OK(c.AllReduce(data, count, dtype, op));
          if (std::string e = same(data, "AllReduce"); !e.empty()) return e;
          void* recv = memory.Upload(Values(dtype, count));
          RANK_OK(c.ReduceScatter(memory.Upload(in), recv, count, dtype, op));
          if (std::string e = same(recv, "ReduceScatter"); !e.empty()) return e;
        }
        void* gathered = memory.Upload(Values(dtype, count));
        RANK_OK(c.AllGather(memory.Upload(in), gathered, count, dtype));
        if (std::string e = same(gathered, "AllGather"); !e.empty()) return e;
        void* data = memory.Upload(in);
        RANK_OK(c.Broadcast(data, count, dtype, 0));
        if (std::string e = same(data, "Broadcast"); !e.empty()) return e;
      }
    }
    RANK_OK(c.Barrier());
    Status self = c.Send(nullptr, 1, DType::kFloat32, 0);
    RANK_CHECK(self.code() == ErrorCode::kInvalidArgument, "{}", self.message());
    return {};
  });
  SKIP_IF_RANKS_SKIPPED(outcomes);
  AllRanksPassed(outcomes);
}

TEST(NcclCommunicatorTest, CollectivesAcrossGpusAreExactAndAgree) {
  const Gpus gpus = CountGpus();
  if (gpus.count < 2) GTEST_SKIP() << "GPU test skipped: " << gpus.Shortfall(2);
  const int n = std::min(gpus.count, 4);
  TempDir dir;
  auto outcomes = RunRanks(n, 300, [&](int rank) -> RankResult {
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(rank, n, dir.path(), 120), 1, 1, n, Transport::kNccl, rank);
    RANK_OK(g.status());
    Communicator& c = *g->world;
    RANK_CHECK(c.transport() == "nccl" && g->tp->transport() == "nccl" && g->tp->size() == 1, "{}",
               "transports");
    for (DType dtype : testing::kAllDTypes) {
      for (int64_t count : testing::kCounts) {
        DeviceMemory memory;
        if (std::string e = testing::CheckCollectives(*g->dp, dtype, count, memory); !e.empty())
          return e;
      }
    }
    // Point to point along the chain of ranks, as pipeline stages will.
    DeviceMemory memory;
    Values msg(DType::kFloat32, 1000);
    for (int64_t i = 0; i < 1000; ++i) msg.Set(i, static_cast<double>(i));
    void* buf = memory.Upload(msg);
    if (rank > 0) RANK_OK(c.Recv(buf, 1000, DType::kFloat32, rank - 1));
    Values got = memory.Download(buf, DType::kFloat32, 1000);
    for (int64_t i = 0; i < 1000; ++i)
      RANK_CHECK(got.Get(i) == static_cast<double>(i + rank * (rank - 1) / 2), "element {}", i);
    for (int64_t i = 0; i < 1000; ++i) got.Set(i, got.Get(i) + rank);
    buf = memory.Upload(got);
    if (rank + 1 < n) RANK_OK(c.Send(buf, 1000, DType::kFloat32, rank + 1));
    // Around the ring at once, every rank sending first (a pipeline's exchanges).
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    Values mine(DType::kFloat32, 1 << 20);
    for (int64_t i = 0; i < mine.count(); ++i)
      mine.Set(i, static_cast<double>(rank * 4096 + i % 4096));
    void* out = memory.Upload(mine);
    void* in = memory.Upload(mine);
    RANK_OK(c.SendRecv(out, mine.count(), next, in, mine.count(), prev, DType::kFloat32));
    Values ring = memory.Download(in, DType::kFloat32, mine.count());
    for (int64_t i = 0; i < mine.count(); ++i)
      RANK_CHECK(ring.Get(i) == static_cast<double>(prev * 4096 + i % 4096), "ring element {}", i);
    // Every rank ends an all-reduce of rank-dependent floats with the same bits.
    Values x(DType::kFloat32, 4099);
    for (int64_t i = 0; i < x.count(); ++i)
      x.Set(i, std::ldexp(std::sin(1.7 * rank + 0.013 * static_cast<double>(i)),
                          static_cast<int>((i * 5 + rank) % 24) - 12));
    void* sum = memory.Upload(x);
    RANK_OK(c.AllReduce(sum, x.count(), DType::kFloat32, ReduceOp::kSum));
    RANK_OK(c.Barrier());
    const Values all = memory.Download(sum, DType::kFloat32, x.count());
    RankResult result;
    result.output.assign(static_cast<const char*>(all.data()), all.bytes());
    return result;
  });
  ASSERT_TRUE(AllRanksPassed(outcomes));
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(outcomes[r].result.output == outcomes[0].result.output)
        << "rank " << r << " ends the all-reduce with other bits than rank 0";
}

TEST(NcclCommunicatorTest, ADeadPeerAbortsTheCommunicatorWithinTheTimeout) {
  const Gpus gpus = CountGpus();
  if (gpus.count < 2) GTEST_SKIP() << "GPU test skipped: " << gpus.Shortfall(2);
  const double timeout_s = 3;
  TempDir dir;
  auto outcomes = RunRanks(2, 120, [&](int rank) -> RankResult {
    Result<ProcessGroups> g = ConnectProcessGroups(EnvOf(rank, 2, dir.path(), timeout_s), 1, 1, 2,
                                                   Transport::kNccl, rank);
    RANK_OK(g.status());
    Communicator& c = *g->world;
    DeviceMemory memory;
    void* x = memory.Upload(Values(DType::kFloat32, 1 << 16));
    RANK_OK(c.AllReduce(x, 1 << 16, DType::kFloat32, ReduceOp::kSum));
    RANK_OK(c.Barrier());
    if (rank == 1) _exit(0);
    const auto start = std::chrono::steady_clock::now();
    RANK_OK(c.AllReduce(x, 1 << 16, DType::kFloat32, ReduceOp::kSum));  // queued; never ends
    Status lost = c.Barrier();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RANK_CHECK(lost.code() == ErrorCode::kUnavailable, "got: {}", lost.message());
    RANK_CHECK(lost.message().find("AllReduce of 65536 fp32") != std::string::npos, "message: {}",
               lost.message());
    RANK_CHECK(took < timeout_s + 3, "took {} s", took);
    Status later = c.AllGather(x, x, 1, DType::kFloat32);
    RANK_CHECK(later.message() == lost.message(), "later: {}", later.message());
    return {};
  });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_FALSE(outcomes[1].returned);
  outcomes.pop_back();
  AllRanksPassed(outcomes);
}

}  // namespace
}  // namespace bm::train::dist
