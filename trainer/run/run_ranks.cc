#include "trainer/run/run_ranks.h"

namespace bm::train {

Result<RunRanks> RunRanks::Connect(const RunConfig& run, const dist::RankEnv& env) {
  const ParallelLayout& l = run.layout;
  const int ranks = l.tp * l.pp * l.dp;
  if (ranks != env.world_size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "layout {} needs {} ranks but this process is rank {} of {}: start one "
                  "benchmake-train per rank with RANK, WORLD_SIZE and BENCHMAKE_RENDEZVOUS set "
                  "(benchmake build does this)",
                  l.ToString(), ranks, env.rank, env.world_size);
  dist::Transport transport = dist::Transport::kGloo;
  if (run.communicator == "nccl") {
    transport = dist::Transport::kNccl;
  } else if (run.communicator == "gloo" && run.device == "cuda") {
    transport = dist::Transport::kStagedGloo;  // the GPU's buffers through the host
  } else if (run.communicator == "auto") {
    BM_ASSIGN_OR_RETURN(transport, dist::TransportForDevice(run.device));
  }
  RunRanks r;
  r.env_ = env;
  BM_ASSIGN_OR_RETURN(r.groups_,
                      dist::ConnectProcessGroups(env, l.tp, l.pp, l.dp, transport, env.local_rank,
                                                 run.communicator != "auto"));
  return r;
}

Result<int64_t> RunRanks::Sum(int64_t value) const {
  BM_TRY(groups_.control->AllReduce(&value, 1, dist::DType::kInt64, dist::ReduceOp::kSum));
  return value;
}

Result<double> RunRanks::Sum(double value) const {
  BM_TRY(groups_.control->AllReduce(&value, 1, dist::DType::kFloat64, dist::ReduceOp::kSum));
  return value;
}

Result<double> RunRanks::Max(double value) const {
  BM_TRY(groups_.control->AllReduce(&value, 1, dist::DType::kFloat64, dist::ReduceOp::kMax));
  return value;
}

Result<std::vector<double>> RunRanks::Gather(std::span<const double> mine) const {
  std::vector<double> all(mine.size() * static_cast<size_t>(world()));
  BM_TRY(groups_.control->AllGather(mine.data(), all.data(), static_cast<int64_t>(mine.size()),
                                    dist::DType::kFloat64));
  return all;
}

Status RunRanks::Barrier() const { return groups_.control->Barrier(); }

}  // namespace bm::train
