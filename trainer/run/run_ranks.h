// RunRanks: the processes of one run as the training loop sees them — which
// rank this is, its data-, tensor- and pipeline-parallel groups (handed to the
// backend), and the loop's own small reductions over the whole world (token
// counts, losses, memory maxima, the barrier around a checkpoint), on the host
// control communicator (trainer/dist/process_groups.h).
//
// The ranks of one data-parallel index (its TP x PP ranks) train on the same
// rows, and the loss exists on the last pipeline stage only (the same on its
// TP ranks): what the loop sums over the world, each DP index contributes
// once, from its counting rank (tp 0 of the last stage).
//
// Connect is collective: every rank of the world calls it with the same run
// config. A world of one needs no rendezvous and has self communicators
// (unless run.communicator insists on a transport).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/rank_env.h"
#include "trainer/run/run_config.h"

namespace bm::train {

class RunRanks {
 public:
  // kInvalidArgument when the layout's TP*PP*DP differs from env.world_size,
  // naming both; the rendezvous' errors.
  static Result<RunRanks> Connect(const RunConfig& run, const dist::RankEnv& env);

  int rank() const { return env_.rank; }
  int world() const { return env_.world_size; }
  bool root() const { return env_.rank == 0; }
  int local_rank() const { return env_.local_rank; }
  int dp_rank() const { return groups_.coords.dp; }
  // The data-, tensor- and pipeline-parallel groups, for BackendOptions.
  dist::Communicator* dp() const { return groups_.dp.get(); }
  dist::Communicator* tp() const { return groups_.tp.get(); }
  dist::Communicator* pp() const { return groups_.pp.get(); }
  // tp 0 of the last pipeline stage: the rank whose rows and loss count for its DP index.
  bool counting() const {
    return groups_.coords.tp == 0 && groups_.coords.pp == groups_.pp->size() - 1;
  }

  // Sums / maxima over every rank (identical results on all).
  Result<int64_t> Sum(int64_t value) const;
  Result<double> Sum(double value) const;
  Result<double> Max(double value) const;
  // Every rank's values, rank by rank: world() * mine.size() of them (every rank passes as many).
  Result<std::vector<double>> Gather(std::span<const double> mine) const;
  Status Barrier() const;

 private:
  dist::RankEnv env_;
  dist::ProcessGroups groups_;
};

}  // namespace bm::train
