// RunRanks: the processes of one run as the training loop sees them — which
// rank this is, its data-parallel group (handed to the backend), and the
// loop's own small reductions over the whole world (token counts, losses,
// memory maxima, the barrier around a checkpoint), on the host control
// communicator (trainer/dist/process_groups.h).
//
// Connect is collective: every rank of the world calls it with the same run
// config. A world of one needs no rendezvous and has self communicators
// (unless run.communicator insists on a transport).
#pragma once

#include <cstdint>
#include <memory>

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
  // The data-parallel group, for BackendOptions::dp.
  dist::Communicator* dp() const { return groups_.dp.get(); }

  // Sums / maxima over every rank (identical results on all).
  Result<int64_t> Sum(int64_t value) const;
  Result<double> Sum(double value) const;
  Result<double> Max(double value) const;
  Status Barrier() const;

 private:
  dist::RankEnv env_;
  dist::ProcessGroups groups_;
};

}  // namespace bm::train
