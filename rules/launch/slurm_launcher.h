// SlurmLauncher: the ranks of a step the Slurm executor runs, as the tasks of
// one srun (engine/slurm.h) — a job of its own, or a step of the allocation
// benchmake runs in:
//
//   srun --job-name=NAME --nodes=K --ntasks=N --ntasks-per-node=P
//        [--gpus-per-task=1 --gpu-bind=none] [--cpus-per-task=threads] ...
//        /bin/sh -c <rank k > 0 to its own log> benchmake-train --config run.json
//
// P = min(N, ranks_per_node), K = N / P (whole nodes only). Each task learns
// its place from Slurm — SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE, which trainer/dist/rank_env.h reads (RANK... and
// OMPI_COMM_WORLD_*, read first, are exported empty) — and from the
// launcher only BENCHMAKE_RENDEZVOUS (the step's scratch dir: on the
// workspace's shared filesystem, the ranks' Gloo file store) and
// BENCHMAKE_COLLECTIVE_TIMEOUT. On cuda every task sees the GPUs of its node's
// tasks and drives entry LOCAL_RANK; NCCL finds its peers through the same
// rendezvous. Rank 0's output comes back through srun into the step log.
//
// The first rank to fail ends the others (srun --kill-on-bad-exit); srun's
// "task N: Exited with exit code X" lines say which rank failed and how.
#pragma once

#include <string>

#include "rules/launch/launcher.h"

namespace bm::launch {

class SlurmLauncher : public Launcher {
 public:
  // `fs` reads srun's messages from the step log.
  SlurmLauncher(CommandRunner& runner, Filesystem& fs, engine::SlurmOptions options,
                std::string job_name)
      : runner_(runner), fs_(fs), options_(std::move(options)), job_name_(std::move(job_name)) {}

  std::string_view name() const override { return "slurm"; }
  int LocalWorldSize(int world_size) const override;
  Result<LaunchResult> Launch(const LaunchSpec& spec) override;

 private:
  CommandRunner& runner_;
  Filesystem& fs_;
  engine::SlurmOptions options_;
  std::string job_name_;
};

// srun's "srun: error: NODE: task(s) LIST: HOW" lines, in order: each rank
// named and how it ended ("Exited with exit code 3", "Killed", "Terminated").
std::vector<std::pair<int, CommandResult>> ParseSrunTaskEnds(std::string_view log);

}  // namespace bm::launch
