// MpirunLauncher: the ranks of a local step as the processes of one mpirun
// (OpenMPI's; [benchmake] launcher = "mpirun"), for clusters without Slurm:
//
//   mpirun -np N [--hostfile H] --bind-to none [--allow-run-as-root]
//          -x BENCHMAKE_RENDEZVOUS -x BENCHMAKE_COLLECTIVE_TIMEOUT -x ... [mpirun_args]
//          /bin/sh -c <rank k > 0 to its own log> benchmake-train --config run.json
//
// mpirun places the ranks on the hostfile's slots (its default: this machine)
// and tells each its place in OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK /
// _LOCAL_SIZE, which trainer/dist/rank_env.h reads; the ranks then meet
// through the rendezvous (a filesystem all hosts share) over Gloo or NCCL —
// MPI only starts them. --bind-to none leaves the threads to the trainer
// (OpenMPI binds each rank to one core otherwise); --allow-run-as-root is
// added when benchmake runs as root. On cuda each rank drives GPU LOCAL_RANK
// of its host; benchmake leases none (the hosts' GPUs are not this
// machine's). The first rank to fail ends the job (mpirun's own rule); its
// report ("Process name: [[j,1],R]  Exit code: X", "process rank R ... exited
// on signal S") names the rank.
#pragma once

#include "rules/launch/launcher.h"

namespace bm::launch {

class MpirunLauncher : public Launcher {
 public:
  // `fs` reads mpirun's report from the step log.
  MpirunLauncher(CommandRunner& runner, Filesystem& fs, engine::MpirunOptions options)
      : runner_(runner), fs_(fs), options_(std::move(options)) {}

  std::string_view name() const override { return "mpirun"; }
  // As the hostfile places them; mpirun tells each rank.
  int LocalWorldSize(int world_size) const override { return world_size; }
  Result<LaunchResult> Launch(const LaunchSpec& spec) override;

 private:
  CommandRunner& runner_;
  Filesystem& fs_;
  engine::MpirunOptions options_;
};

// The rank mpirun's report names as the first to fail, and how it ended.
std::vector<std::pair<int, CommandResult>> ParseMpirunReport(std::string_view log);

}  // namespace bm::launch
