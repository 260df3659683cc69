// The Gloo communicator across real processes (tests/trainer/multi_rank.h):
// every operation on every dtype and on awkward counts, checked exactly;
// identical bits on every rank; point-to-point chains; a peer that exits, one
// killed with SIGKILL (kPeerLost: what benchmake-train exits 75 on) and one
// that stalls (kUnavailable).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "tests/trainer/collective_checks.h"
#include "tests/trainer/multi_rank.h"
#include "trainer/dist/process_groups.h"

namespace bm::train::dist {
namespace {

using testing::AllRanksPassed;
using testing::EnvOf;
using testing::RankResult;
using testing::RunRanks;
using testing::TempDir;

// The world communicator of a rank in a world of n (one DP group).
Result<ProcessGroups> Connect(int rank, int n, const std::string& dir, double timeout_s = 30) {
  return ConnectProcessGroups(EnvOf(rank, n, dir, timeout_s), 1, 1, n, Transport::kGloo);
}

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class GlooCollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectivesTest, EveryOperationOnEveryDtypeAndCountIsExact) {
  const int n = GetParam();
  TempDir dir;
  auto outcomes = RunRanks(n, 120, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    RANK_CHECK(c.rank() == rank && c.size() == n, "rank {} size {}", c.rank(), c.size());
    RANK_CHECK(c.transport() == "gloo" && !c.device(), "transport {}", c.transport());
    auto check = [&](DType dtype, int64_t count) {
      return testing::CheckCollectives(c, dtype, count, *testing::HostMemory());
    };
    for (DType dtype : testing::kAllDTypes)
      for (int64_t count : testing::kCounts)
        if (std::string e = check(dtype, count); !e.empty()) return e;
    // Large enough for several of Gloo's 1 MiB ring segments.
    if (std::string e = check(DType::kFloat32, 300001); !e.empty()) return e;
    RANK_OK(c.Barrier());
    return {};
  });
  AllRanksPassed(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCollectivesTest, ::testing::Values(2, 3, 4));

TEST(GlooCommunicatorTest, AllReduceGivesEveryRankTheSameBits) {
  const int n = 3;
  const int64_t count = 1001;  // not a multiple of the ranks or of anything
  TempDir dir;
  auto outcomes = RunRanks(n, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    // Rank-dependent values over many binades: the sum's bits depend on the order.
    auto value = [](int r, int64_t i) {
      return static_cast<float>(std::ldexp(std::sin(1.7 * r + 0.013 * static_cast<double>(i)),
                                           static_cast<int>((i * 5 + r) % 24) - 12));
    };
    std::vector<float> x(static_cast<size_t>(count * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = value(rank, static_cast<int64_t>(i));
    std::vector<float> all = x;
    RANK_OK(c.AllReduce(all.data(), count * n, DType::kFloat32, ReduceOp::kSum));
    for (size_t i = 0; i < all.size(); ++i) {
      double want = 0, scale = 0;
      for (int r = 0; r < n; ++r) {
        want += value(r, static_cast<int64_t>(i));
        scale += std::fabs(value(r, static_cast<int64_t>(i)));
      }
      RANK_CHECK(std::fabs(all[i] - want) <= 1e-6 * scale, "element {}: {} vs {}", i, all[i], want);
    }
    std::vector<float> again = x;
    RANK_OK(c.AllReduce(again.data(), count * n, DType::kFloat32, ReduceOp::kSum));
    RANK_CHECK(std::memcmp(again.data(), all.data(), all.size() * 4) == 0, "{}", "a second run");
    // ReduceScatter is the all-reduce's block, and AllGather puts it back together.
    std::vector<float> block(static_cast<size_t>(count));
    RANK_OK(c.ReduceScatter(x.data(), block.data(), count, DType::kFloat32, ReduceOp::kSum));
    RANK_CHECK(std::memcmp(block.data(), all.data() + rank * count, block.size() * 4) == 0, "{}",
               "reduce-scatter block differs from the all-reduce");
    std::vector<float> gathered(x.size());
    RANK_OK(c.AllGather(block.data(), gathered.data(), count, DType::kFloat32));
    RANK_CHECK(std::memcmp(gathered.data(), all.data(), all.size() * 4) == 0, "{}",
               "all-gather of the blocks differs from the all-reduce");
    RankResult result;
    result.output.assign(reinterpret_cast<const char*>(all.data()), all.size() * 4);
    return result;
  });
  ASSERT_TRUE(AllRanksPassed(outcomes));
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(outcomes[r].result.output == outcomes[0].result.output)
        << "rank " << r << " ends the all-reduce with other bits than rank 0";
}

TEST(GlooCommunicatorTest, SendAndRecvChainForwardAndBack) {
  // What pipeline parallelism does: activations down the chain of stages,
  // gradients back up, several messages per pair matched in order.
  const int n = 4;
  const std::vector<int64_t> counts = {1, 7, 1000};
  TempDir dir;
  auto outcomes = RunRanks(n, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    const float before = static_cast<float>(rank * (rank - 1) / 2);  // 0 + 1 + ... + rank-1
    for (size_t k = 0; k < counts.size(); ++k) {
      std::vector<float> msg(static_cast<size_t>(counts[k]));
      if (rank == 0) {
        for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<float>(k * 1000 + i);
      } else {
        RANK_OK(c.Recv(msg.data(), counts[k], DType::kFloat32, rank - 1));
        for (size_t i = 0; i < msg.size(); ++i)
          RANK_CHECK(msg[i] == static_cast<float>(k * 1000 + i) + before, "message {} element {}",
                     k, i);
      }
      for (float& v : msg) v += static_cast<float>(rank);
      if (rank + 1 < n) RANK_OK(c.Send(msg.data(), counts[k], DType::kFloat32, rank + 1));
    }
    std::vector<int64_t> grad(5, 0);
    if (rank + 1 < n) {
      RANK_OK(c.Recv(grad.data(), 5, DType::kInt64, rank + 1));
      int64_t after = 0;  // rank+1 + ... + n-1
      for (int q = rank + 1; q < n; ++q) after += q;
      for (int64_t g : grad) RANK_CHECK(g == after, "gradient {} != {}", g, after);
    }
    for (int64_t& g : grad) g += rank;
    if (rank > 0) RANK_OK(c.Send(grad.data(), 5, DType::kInt64, rank - 1));
    return {};
  });
  AllRanksPassed(outcomes);
}

TEST(GlooCommunicatorTest, SendRecvExchangesWithBothNeighboursAtOnce) {
  // What a pipeline stage does between two operations: its output to one
  // neighbour while it receives from the other, or both ways with one
  // neighbour. Every rank sends first, so plain Sends could wait on each other
  // forever; SendRecv posts both. Messages of 1 MiB, several rounds, and a
  // round that only receives (a count of 0 to send).
  const int n = 3;
  const int64_t count = 1 << 18;
  TempDir dir;
  auto outcomes = RunRanks(n, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::vector<float> out(count), in(count);
    for (int round = 0; round < 3; ++round) {
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(1000 * rank + round + i % 7);
      RANK_OK(c.SendRecv(out.data(), count, next, in.data(), count, prev, DType::kFloat32));
      for (int64_t i = 0; i < count; ++i)
        RANK_CHECK(in[i] == static_cast<float>(1000 * prev + round + i % 7),
                   "round {} element {}: {}", round, i, in[i]);
    }
    if (rank < 2) {  // ranks 0 and 1 swap with each other
      const int other = 1 - rank;
      int64_t mine = rank + 10, theirs = -1;
      RANK_OK(c.SendRecv(&mine, 1, other, &theirs, 1, other, DType::kInt64));
      RANK_CHECK(theirs == other + 10, "swap got {}", theirs);
      // Rank 0 only receives, rank 1 only sends.
      RANK_OK(c.SendRecv(&mine, rank == 1 ? 1 : 0, other, &theirs, rank == 0 ? 1 : 0, other,
                         DType::kInt64));
      if (rank == 0) RANK_CHECK(theirs == 11, "one-way got {}", theirs);
    }
    float x = 0;
    Status self = c.SendRecv(&x, 1, rank, &x, 1, next, DType::kFloat32);
    RANK_CHECK(self.code() == ErrorCode::kInvalidArgument, "{}", self.message());
    RANK_OK(c.Barrier());
    return {};
  });
  AllRanksPassed(outcomes);
}

TEST(GlooCommunicatorTest, RefusesBadArgumentsWithoutCommunicating) {
  TempDir dir;
  auto outcomes = RunRanks(2, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, 2, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    float x[4] = {};
    Status negative = c.AllReduce(x, -1, DType::kFloat32, ReduceOp::kSum);
    RANK_CHECK(negative.code() == ErrorCode::kInvalidArgument, "{}", negative.message());
    Status root = c.Broadcast(x, 4, DType::kFloat32, 2);
    RANK_CHECK(root.code() == ErrorCode::kInvalidArgument, "{}", root.message());
    Status self = c.Send(x, 4, DType::kFloat32, rank);
    RANK_CHECK(self.code() == ErrorCode::kInvalidArgument, "{}", self.message());
    Status outside = c.Recv(x, 4, DType::kFloat32, 5);
    RANK_CHECK(outside.code() == ErrorCode::kInvalidArgument, "{}", outside.message());
    RANK_OK(c.Barrier());  // still usable
    return {};
  });
  AllRanksPassed(outcomes);
}

// Windows are NCCL device memory: the host transports refuse one, naming themselves, and
// stay usable (nothing was communicated).
TEST(GlooCommunicatorTest, HostTransportsHaveNoWindows) {
  std::unique_ptr<Communicator> self = MakeSelfCommunicator();
  Result<std::unique_ptr<WindowMemory>> none = self->AllocateWindow(1 << 20);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(none.status().message().find("self communicators have no registered windows"),
            std::string::npos)
      << none.status().message();
  TempDir dir;
  auto outcomes = RunRanks(2, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, 2, dir.path());
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    Result<std::unique_ptr<WindowMemory>> w = c.AllocateWindow(4096);
    RANK_CHECK(!w.ok() && w.status().code() == ErrorCode::kUnsupported &&
                   w.status().message().find("gloo") != std::string::npos,
               "{}", w.ok() ? "a gloo window" : w.status().message());
    RANK_OK(c.Barrier());
    return {};
  });
  AllRanksPassed(outcomes);
}

TEST(GlooCommunicatorTest, APeerThatExitsMidRunFailsTheOthersWithTheOperationNamed) {
  const int n = 3;
  const double timeout_s = 5;
  TempDir dir;
  auto outcomes = RunRanks(n, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path(), timeout_s);
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    std::vector<float> x(1000, 1.0f);
    RANK_OK(c.AllReduce(x.data(), 1000, DType::kFloat32, ReduceOp::kSum));
    if (rank == 2) _exit(0);  // gone, with its connections closed by the kernel
    const auto start = Clock::now();
    Status lost = c.AllReduce(x.data(), 1000, DType::kFloat32, ReduceOp::kSum);
    const double took = SecondsSince(start);
    RANK_CHECK(lost.code() == ErrorCode::kPeerLost, "got: {}", lost.message());
    RANK_CHECK(lost.message().find("AllReduce of 1000 fp32") != std::string::npos &&
                   lost.message().find("world") != std::string::npos,
               "message: {}", lost.message());
    RANK_CHECK(took < timeout_s + 2, "took {} s", took);
    Status later = c.Barrier();
    RANK_CHECK(later.message() == lost.message(), "later call: {}", later.message());
    return {};
  });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_FALSE(outcomes[2].returned);
  outcomes.pop_back();
  AllRanksPassed(outcomes);
}

// kill -9 of a rank mid-run: the kernel closes its sockets, and its peer's
// next collective (or the one it is in) fails with kPeerLost — the failure is
// the peer's — at once, not after the timeout. Rank 1 dies between two
// all-reduces or inside the second, as a rank killed from outside does; 20 MB
// each, so that rank 0 is still exchanging when it goes.
TEST(GlooCommunicatorTest, APeerKilledWithSigkillIsAPeerLost) {
  const double timeout_s = 30;
  TempDir dir;
  auto outcomes = RunRanks(2, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, 2, dir.path(), timeout_s);
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    std::vector<float> x(5'000'000, 1.0f);
    RANK_OK(c.AllReduce(x.data(), 1000, DType::kFloat32, ReduceOp::kSum));
    if (rank == 1) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        kill(getpid(), SIGKILL);
      }).detach();
      for (;;) c.AllReduce(x.data(), 5'000'000, DType::kFloat32, ReduceOp::kSum).ok();
    }
    const auto start = Clock::now();
    Status lost;
    while (lost.ok() && SecondsSince(start) < timeout_s)
      lost = c.AllReduce(x.data(), 5'000'000, DType::kFloat32, ReduceOp::kSum);
    const double took = SecondsSince(start);
    RANK_CHECK(lost.code() == ErrorCode::kPeerLost, "got {}: {}", ErrorCodeName(lost.code()),
               lost.message());
    RANK_CHECK(lost.message().find("a peer was lost") != std::string::npos &&
                   lost.message().find("AllReduce of 5000000 fp32") != std::string::npos,
               "message: {}", lost.message());
    RANK_CHECK(took < timeout_s / 2, "took {} s", took);
    return {};
  });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(WIFSIGNALED(outcomes[1].wait_status) && WTERMSIG(outcomes[1].wait_status) == SIGKILL)
      << outcomes[1].Describe();
  outcomes.pop_back();
  AllRanksPassed(outcomes);
}

// A stalled peer is not a lost one: the first rank to time out fails with
// kUnavailable. Gloo then closes that rank's connections, so the other rank
// still waiting may see them closed just before its own timeout: kPeerLost.
TEST(GlooCommunicatorTest, APeerThatStallsFailsTheOthersWithinTheTimeout) {
  const int n = 3;
  const double timeout_s = 1;
  TempDir dir;
  auto outcomes = RunRanks(n, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> groups = Connect(rank, n, dir.path(), timeout_s);
    RANK_OK(groups.status());
    Communicator& c = *groups->world;
    if (rank == 2) {  // alive, connected, but never joins the collective
      std::this_thread::sleep_for(std::chrono::duration<double>(timeout_s + 0.5));
      return {};
    }
    std::vector<int64_t> x(10, 1);
    const auto start = Clock::now();
    Status stalled = c.AllReduce(x.data(), 10, DType::kInt64, ReduceOp::kMax);
    const double took = SecondsSince(start);
    RANK_CHECK(stalled.code() == ErrorCode::kUnavailable || stalled.code() == ErrorCode::kPeerLost,
               "got: {}", stalled.message());
    RANK_CHECK(stalled.message().find("AllReduce of 10 int64") != std::string::npos, "message: {}",
               stalled.message());
    RANK_CHECK(took >= timeout_s * 0.9 && took < timeout_s + 2, "took {} s", took);
    RankResult r;
    r.output = stalled.code() == ErrorCode::kUnavailable ? "timed out" : "lost a peer";
    return r;
  });
  AllRanksPassed(outcomes);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].result.output == "timed out" || outcomes[1].result.output == "timed out")
      << outcomes[0].result.output << ", " << outcomes[1].result.output;
}

}  // namespace
}  // namespace bm::train::dist
