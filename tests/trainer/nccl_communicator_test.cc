// The NCCL communicator on real GPUs, every test in forked ranks (the parent
// never touches CUDA, so its children can). Without a GPU each test skips
// and says so; the multi-GPU tests skip on a machine with fewer than two.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

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
    // NCCL's remote error (kPeerLost: benchmake-train exits 75), or, where NCCL only waits
    // for the peer's data, the watchdog's timeout (kUnavailable).
    RANK_CHECK(lost.code() == ErrorCode::kPeerLost || lost.code() == ErrorCode::kUnavailable,
               "got: {}", lost.message());
    RANK_CHECK(lost.message().find("AllReduce of 65536 fp32") != std::string::npos, "message: {}",
               lost.message());
    RANK_CHECK(took < timeout_s + 3, "took {} s", took);
    Status later = c.AllGather(x, x, 1, DType::kFloat32);
    RANK_CHECK(later.message() == lost.message(), "later: {}", later.message());
    RankResult r;
    r.output =
        fmt::format("{} after {:.2f} s: {}", ErrorCodeName(lost.code()), took, lost.message());
    return r;
  });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_FALSE(outcomes[1].returned);
  std::printf("rank 0 on its dead peer: %s\n", outcomes[0].result.output.c_str());
  outcomes.pop_back();
  AllRanksPassed(outcomes);
}

// Waits for `stream` up to `seconds`; "" when done, else why not (a symmetric kernel that never
// finishes does not read NCCL's abort flag, so the watchdog cannot end it: the rank says so).
std::string Finish(cudaStream_t stream, double seconds, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return "";
    if (e != cudaErrorNotReady) return fmt::format("{}: {}", what, cudaGetErrorString(e));
    if (std::chrono::steady_clock::now() > deadline)
      return fmt::format("{} did not finish within {} s", what, seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The collectives ZeRO issues, on buffers in a window (the same offsets on every rank) and on
// plain cudaMalloc'd ones, on a stream of the rank's own (as the trainer's communication stream
// is): every result has the plain one's bits (two ranks: a sum of two is exact in either order),
// and the all-gather's is each rank's input. At NCCL's default CTA policy (its symmetric kernels)
// and at the zero-CTA policy (the all-gather on the copy engines).
void CheckWindowCollectives(const char* policy) {
  const Gpus gpus = CountGpus();
  if (gpus.count < 2) GTEST_SKIP() << "GPU test skipped: " << gpus.Shortfall(2);
  TempDir dir;
  auto outcomes = RunRanks(2, 180, [&](int rank) -> RankResult {
    setenv("NCCL_CTA_POLICY", policy, 1);  // read when the communicator is made
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(rank, 2, dir.path(), 60), 1, 1, 2, Transport::kNccl, rank);
    RANK_OK(g.status());
    Communicator& c = *g->dp;
    constexpr int64_t n = int64_t{1} << 20;  // elements per rank
    const size_t gather_bytes = 2 * n * 2, reduce_bytes = 2 * n * 4, sum_bytes = n * 4;
    const size_t bytes = gather_bytes + reduce_bytes + n * 4 + sum_bytes + (size_t{1} << 20);
    Result<std::unique_ptr<WindowMemory>> window = c.AllocateWindow(bytes);
    RANK_OK(window.status());
    RANK_CHECK((*window)->bytes() == bytes && (*window)->data() != nullptr, "{}", "window");
    DeviceMemory plain_memory;
    const Values zeros(DType::kFloat32, static_cast<int64_t>(bytes / 4));
    char* plain = static_cast<char*>(plain_memory.Upload(zeros));
    RANK_CHECK(plain != nullptr, "{}", "plain buffers");
    cudaStream_t stream = nullptr;
    RANK_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "{}",
               "stream");
    const Values mine_bf16 = RandomValues(DType::kBFloat16, n, 11 + rank);
    const Values grads = RandomValues(DType::kFloat32, 2 * n, 21 + rank);
    const Values sum = RandomValues(DType::kFloat32, n, 31 + rank);
    // Offsets in either memory: gathered bf16 (2n), gradients (2n fp32), their reduced slice
    // (n fp32), an all-reduced block (n fp32).
    const size_t at_gather = 0, at_grads = gather_bytes, at_slice = at_grads + reduce_bytes,
                 at_sum = at_slice + n * 4;
    std::vector<std::string> results;
    for (char* base : {(*window)->data(), plain}) {
      auto put = [&](size_t at, const Values& v) {
        return cudaMemcpyAsync(base + at, v.data(), v.bytes(), cudaMemcpyHostToDevice, stream);
      };
      RANK_CHECK(put(at_gather + rank * n * 2, mine_bf16) == cudaSuccess &&
                     put(at_grads, grads) == cudaSuccess && put(at_sum, sum) == cudaSuccess,
                 "{}", "uploads");
      // In place, as ZeRO-3 gathers a unit into its slot and ZeRO-1 reduce-scatters its bucket.
      RANK_OK(c.AllGather(base + at_gather + rank * n * 2, base + at_gather, n, DType::kBFloat16,
                          stream));
      RANK_OK(c.ReduceScatter(base + at_grads, base + at_slice, n, DType::kFloat32, ReduceOp::kSum,
                              stream));
      RANK_OK(c.AllReduce(base + at_sum, n, DType::kFloat32, ReduceOp::kSum, stream));
      if (std::string e = Finish(stream, 30, fmt::format("the collectives at policy {}", policy));
          !e.empty()) {
        std::fprintf(stderr, "rank %d: %s; exiting\n", rank, e.c_str());
        std::_Exit(3);  // a stuck kernel would hang the process's teardown too
      }
      std::string out(gather_bytes + n * 4 + sum_bytes, '\0');
      cudaMemcpy(out.data(), base + at_gather, gather_bytes, cudaMemcpyDeviceToHost);
      cudaMemcpy(out.data() + gather_bytes, base + at_slice, n * 4, cudaMemcpyDeviceToHost);
      cudaMemcpy(out.data() + gather_bytes + n * 4, base + at_sum, sum_bytes,
                 cudaMemcpyDeviceToHost);
      results.push_back(std::move(out));
    }
    RANK_CHECK(results[0] == results[1],
               "the window's results differ from the plain ones at "
               "policy {}",
               policy);
    RANK_CHECK(std::memcmp(results[0].data() + rank * n * 2, mine_bf16.data(), n * 2) == 0, "{}",
               "the gathered block of this rank is not its input");
    cudaStreamDestroy(stream);
    window->reset();  // deregistered before the communicator goes
    RANK_OK(c.Barrier());
    return {};
  });
  AllRanksPassed(outcomes);
}

TEST(NcclCommunicatorTest, WindowCollectivesHaveThePlainBitsAtTheDefaultPolicy) {
  CheckWindowCollectives("0");
}

TEST(NcclCommunicatorTest, WindowCollectivesHaveThePlainBitsAtTheZeroCtaPolicy) {
  CheckWindowCollectives("2");
}

// A group of one registers nothing (NCCL gives no window) and frees its memory all the same.
TEST(NcclCommunicatorTest, AOneRankGroupsWindowIsUsableMemory) {
  auto outcomes = RunRanks(1, 120, [](int) -> RankResult {
    RankResult skip;
    if (skip.skip = CannotRun(1); !skip.skip.empty()) return skip;
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(0, 1, "", 60), 1, 1, 1, Transport::kNccl, 0, true);
    RANK_OK(g.status());
    for (int i = 0; i < 2; ++i) {  // twice: the first one's release left the group usable
      Result<std::unique_ptr<WindowMemory>> w = g->dp->AllocateWindow(size_t{1} << 22);
      RANK_OK(w.status());
      const Values in = RandomValues(DType::kFloat32, 1000, 5);
      RANK_CHECK(
          cudaMemcpy((*w)->data(), in.data(), in.bytes(), cudaMemcpyHostToDevice) == cudaSuccess,
          "{}", "upload");
      RANK_OK(g->dp->AllReduce((*w)->data(), 1000, DType::kFloat32, ReduceOp::kSum));
      RANK_OK(g->dp->Barrier());
      Values out(DType::kFloat32, 1000);
      cudaMemcpy(out.data(), (*w)->data(), out.bytes(), cudaMemcpyDeviceToHost);
      RANK_CHECK(std::memcmp(out.data(), in.data(), in.bytes()) == 0, "{}", "a sum of one");
    }
    return {};
  });
  SKIP_IF_RANKS_SKIPPED(outcomes);
  AllRanksPassed(outcomes);
}

}  // namespace
}  // namespace bm::train::dist
