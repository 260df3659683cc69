#include "trainer/dist/process_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "tests/trainer/multi_rank.h"

namespace bm::train::dist {
namespace {

using testing::AllRanksPassed;
using testing::EnvOf;
using testing::RankResult;
using testing::RunRanks;
using testing::TempDir;

TEST(ProcessGroupsTest, RanksFollowMegatronsOrder) {
  // TP2 PP2 DP2: tensor parallel innermost, then data, then pipeline.
  const Coords want[8] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {1, 0, 1},
                          {0, 1, 0}, {1, 1, 0}, {0, 1, 1}, {1, 1, 1}};
  for (int r = 0; r < 8; ++r) {
    const Coords c = CoordsOf(r, 2, 2, 2);
    EXPECT_EQ(c.tp, want[r].tp) << r;
    EXPECT_EQ(c.pp, want[r].pp) << r;
    EXPECT_EQ(c.dp, want[r].dp) << r;
  }
  for (int r = 0; r < 3 * 2 * 4; ++r) EXPECT_EQ(RankOf(CoordsOf(r, 3, 2, 4), 3, 2, 4), r);
}

TEST(ProcessGroupsTest, TransportFollowsTheDevice) {
  EXPECT_EQ(*TransportForDevice("cpu"), Transport::kGloo);
  EXPECT_EQ(*TransportForDevice("cuda"), Transport::kNccl);
  Result<Transport> bad = TransportForDevice("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tpu"), std::string::npos);
}

TEST(ProcessGroupsTest, AWorldOfOneGetsSelfCommunicators) {
  for (bool force : {false, true}) {
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(0, 1, "", 5), 1, 1, 1, Transport::kGloo, 0, force);
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (Communicator* c : {g->world.get(), g->tp.get(), g->pp.get(), g->dp.get()}) {
      EXPECT_EQ(c->transport(), "self");
      EXPECT_EQ(c->size(), 1);
    }
  }
  Result<ProcessGroups> nccl = ConnectProcessGroups(EnvOf(0, 1, "", 5), 1, 1, 1, Transport::kNccl);
  ASSERT_TRUE(nccl.ok()) << nccl.status().message();
  EXPECT_EQ(nccl->world->transport(), "self");
}

#if !BENCHMAKE_HAVE_NCCL
TEST(ProcessGroupsTest, NcclInABuildWithoutItIsUnsupported) {
  Result<ProcessGroups> g =
      ConnectProcessGroups(EnvOf(0, 1, "", 5), 1, 1, 1, Transport::kNccl, 0, /*force=*/true);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(g.status().message().find("without NCCL"), std::string::npos) << g.status().message();
}
#endif

TEST(ProcessGroupsTest, RefusesALayoutThatDoesNotFitTheWorld) {
  Result<ProcessGroups> g = ConnectProcessGroups(EnvOf(0, 4, "/tmp", 5), 3, 1, 1, Transport::kGloo);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("TP3xPP1xDP1"), std::string::npos) << g.status().message();
  Result<ProcessGroups> zero = ConnectProcessGroups(EnvOf(0, 1, "", 5), 0, 1, 1, Transport::kGloo);
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ProcessGroupsTest, SeveralRanksNeedARendezvous) {
  Result<ProcessGroups> g = ConnectProcessGroups(EnvOf(0, 2, "", 5), 1, 1, 2, Transport::kGloo);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find(kEnvRendezvous), std::string::npos) << g.status().message();
}

// Four ranks in a layout, and the members of each group by rank.
struct Layout {
  int tp, pp, dp;
  std::vector<std::vector<int>> tp_groups, pp_groups, dp_groups;
};

std::vector<int> GroupOf(const std::vector<std::vector<int>>& groups, int rank) {
  for (const auto& g : groups)
    if (std::find(g.begin(), g.end(), rank) != g.end()) return g;
  return {rank};  // groups of one are not listed
}

class ProcessGroupsLayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(ProcessGroupsLayoutTest, EachGroupSeesItsPeersInOrder) {
  const Layout l = GetParam();
  TempDir dir;
  auto outcomes = RunRanks(4, 60, [&](int rank) -> RankResult {
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(rank, 4, dir.path(), 30), l.tp, l.pp, l.dp, Transport::kGloo);
    RANK_OK(g.status());
    const Coords c = g->coords;
    struct Case {
      const char* name;
      Communicator* comm;
      std::vector<int> want;
      int coord;
    };
    const Case cases[] = {{"world", g->world.get(), {0, 1, 2, 3}, rank},
                          {"tp", g->tp.get(), GroupOf(l.tp_groups, rank), c.tp},
                          {"pp", g->pp.get(), GroupOf(l.pp_groups, rank), c.pp},
                          {"dp", g->dp.get(), GroupOf(l.dp_groups, rank), c.dp}};
    for (const Case& k : cases) {
      const int n = static_cast<int>(k.want.size());
      RANK_CHECK(k.comm->size() == n && k.comm->rank() == k.coord, "{}: rank {} of {}", k.name,
                 k.comm->rank(), k.comm->size());
      // Who is in the group, in group-rank order: every member's global rank.
      std::vector<int64_t> seen(static_cast<size_t>(n));
      const int64_t mine = rank;
      RANK_OK(k.comm->AllGather(&mine, seen.data(), 1, DType::kInt64));
      for (int i = 0; i < n; ++i)
        RANK_CHECK(seen[static_cast<size_t>(i)] == k.want[static_cast<size_t>(i)],
                   "{} group member {} is rank {}, not {}", k.name, i, seen[i], k.want[i]);
    }
    return {};
  });
  AllRanksPassed(outcomes);
}

INSTANTIATE_TEST_SUITE_P(FourRanks, ProcessGroupsLayoutTest,
                         ::testing::Values(Layout{2, 1, 2, {{0, 1}, {2, 3}}, {}, {{0, 2}, {1, 3}}},
                                           Layout{2, 2, 1, {{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}, {}},
                                           Layout{1, 2, 2, {}, {{0, 2}, {1, 3}}, {{0, 1}, {2, 3}}}),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           return fmt::format("TP{}PP{}DP{}", info.param.tp, info.param.pp,
                                              info.param.dp);
                         });

TEST(ProcessGroupsTest, ARankThatNeverComesFailsTheRendezvousNamingIt) {
  const double timeout_s = 1.5;
  TempDir dir;
  // A world of three, of which rank 2 never starts.
  auto outcomes = RunRanks(2, 60, [&](int rank) -> RankResult {
    const auto start = std::chrono::steady_clock::now();
    Result<ProcessGroups> g =
        ConnectProcessGroups(EnvOf(rank, 3, dir.path(), timeout_s), 1, 1, 3, Transport::kGloo);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RANK_CHECK(!g.ok(), "{}", "connected without rank 2");
    RANK_CHECK(g.status().code() == ErrorCode::kUnavailable, "{}", g.status().message());
    RANK_CHECK(
        g.status().message().find("rank 2 of group 'world' did not arrive") != std::string::npos,
        "message: {}", g.status().message());
    RANK_CHECK(took < timeout_s + 1.5, "took {} s", took);
    return {};
  });
  AllRanksPassed(outcomes);
}

}  // namespace
}  // namespace bm::train::dist
