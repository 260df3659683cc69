#include "trainer/dist/rank_env.h"

#include <gtest/gtest.h>

#include "trainer/dist/communicator.h"

namespace bm::train::dist {
namespace {

TEST(RankEnvTest, DefaultsToOneRank) {
  Result<RankEnv> env = ReadRankEnv({});
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->local_world_size, 1);
  EXPECT_TRUE(env->rendezvous.empty());
}

TEST(RankEnvTest, RoundTripsThroughVariables) {
  RankEnv in;
  in.rank = 3;
  in.world_size = 4;
  in.local_rank = 1;
  in.local_world_size = 2;
  in.rendezvous = "/tmp/rdv";
  in.timeout_s = 12.5;
  Result<RankEnv> out = ReadRankEnv(RankEnvVars(in));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->rank, 3);
  EXPECT_EQ(out->world_size, 4);
  EXPECT_EQ(out->local_rank, 1);
  EXPECT_EQ(out->local_world_size, 2);
  EXPECT_EQ(out->rendezvous, "/tmp/rdv");
  EXPECT_DOUBLE_EQ(out->timeout_s, 12.5);
}

TEST(RankEnvTest, ReadsSlurmAndOpenMpi) {
  Result<RankEnv> slurm = ReadRankEnv({{"SLURM_PROCID", "2"},
                                       {"SLURM_NTASKS", "4"},
                                       {"SLURM_LOCALID", "0"},
                                       {"SLURM_NTASKS_PER_NODE", "2"},
                                       {kEnvRendezvous, "/shared/r"}});
  ASSERT_TRUE(slurm.ok()) << slurm.status().message();
  EXPECT_EQ(slurm->rank, 2);
  EXPECT_EQ(slurm->world_size, 4);
  EXPECT_EQ(slurm->local_world_size, 2);
  Result<RankEnv> mpi = ReadRankEnv({{"OMPI_COMM_WORLD_RANK", "1"},
                                     {"OMPI_COMM_WORLD_SIZE", "2"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                     {kEnvRendezvous, "/r"}});
  ASSERT_TRUE(mpi.ok()) << mpi.status().message();
  EXPECT_EQ(mpi->rank, 1);
  EXPECT_EQ(mpi->world_size, 2);
  EXPECT_EQ(mpi->local_rank, 1);
}

// mpirun in a Slurm batch script (OpenMPI's usual way onto a Slurm cluster):
// every rank inherits the batch step's SLURM_PROCID=0 and the job's
// SLURM_NTASKS, as `SLURM_PROCID=0 SLURM_NTASKS=4 mpirun -np 2 env` shows
// (OpenMPI 4.1.4); mpirun's own variables say where each rank is.
TEST(RankEnvTest, MpirunsVariablesWinOverTheSlurmJobAroundIt) {
  Result<RankEnv> env = ReadRankEnv({{"SLURM_PROCID", "0"},
                                     {"SLURM_NTASKS", "4"},
                                     {"SLURM_LOCALID", "0"},
                                     {"SLURM_NTASKS_PER_NODE", "4"},
                                     {"OMPI_COMM_WORLD_RANK", "1"},
                                     {"OMPI_COMM_WORLD_SIZE", "2"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                     {kEnvRank, ""},  // what the mpirun launcher exports
                                     {kEnvRendezvous, "/r"}});
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->world_size, 2);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
}

TEST(RankEnvTest, RefusesBadValuesNamingTheVariable) {
  Result<RankEnv> bad = ReadRankEnv({{kEnvRank, "x"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RANK=x"), std::string::npos);
  Result<RankEnv> outside = ReadRankEnv({{kEnvRank, "2"}, {kEnvWorldSize, "2"}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("outside"), std::string::npos);
  Result<RankEnv> no_rdv = ReadRankEnv({{kEnvRank, "0"}, {kEnvWorldSize, "2"}});
  ASSERT_FALSE(no_rdv.ok());
  EXPECT_NE(no_rdv.status().message().find(kEnvRendezvous), std::string::npos);
  Result<RankEnv> timeout = ReadRankEnv({{kEnvTimeout, "-1"}});
  ASSERT_FALSE(timeout.ok());
  EXPECT_NE(timeout.status().message().find(kEnvTimeout), std::string::npos);
}

TEST(SelfCommunicatorTest, CollectivesOfOneRankAreCopies) {
  std::unique_ptr<Communicator> c = MakeSelfCommunicator();
  EXPECT_EQ(c->size(), 1);
  float a[3] = {1, 2, 3}, b[3] = {};
  ASSERT_TRUE(c->AllReduce(a, 3, DType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(a[2], 3);
  ASSERT_TRUE(c->ReduceScatter(a, b, 3, DType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(b[1], 2);
  ASSERT_TRUE(c->AllGather(a, b, 3, DType::kFloat32).ok());
  EXPECT_EQ(b[0], 1);
  EXPECT_FALSE(c->Send(a, 3, DType::kFloat32, 1).ok());
  EXPECT_FALSE(c->Broadcast(a, 3, DType::kFloat32, 1).ok());
  EXPECT_EQ(c->ReduceScatter(a, b, -1, DType::kFloat32, ReduceOp::kSum).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace bm::train::dist
