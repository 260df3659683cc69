// Placement: where a step's processes run and who starts its ranks
// (docs/CLUSTER.md). The BENCHFILE says it:
//
//   [benchmake]
//   executor = "slurm"        # where stale steps' processes run: "local" (default) or "slurm"
//   launcher = "mpirun"       # who starts the ranks of a local step: "local" (default), "mpirun"
//   [benchmake.slurm]         # executor = "slurm"
//   partition = "gpu"         # srun --partition (default: the cluster's)
//   account = "proj42"        # srun --account
//   time = "4:00:00"          # srun --time: each job's time limit (default: the partition's)
//   ranks_per_node = 8        # ranks (one GPU each on cuda) per node: a DP16 step takes 2 nodes
//   srun_args = ["--qos=hi"]  # more srun flags, for every job
//   steps = "gpu"             # which stale steps Slurm runs: "gpu" (those that need GPUs), "all"
//   retries = 2               # a job preempted or lost with its node runs again (and resumes)
//   [benchmake.mpirun]        # launcher = "mpirun"
//   hostfile = "hosts"        # mpirun --hostfile, relative to the BENCHFILE
//   mpirun_args = ["--mca", "btl_tcp_if_include", "eth0"]
//
// and a target may say, outside its key:
//   executor = "local"        # or "slurm": this step, whatever `steps` says
//   slurm = { partition = "h100", time = "30:00", srun_args = ["--exclusive"] }
//     partition, account, time and ranks_per_node replace the workspace's;
//     srun_args come after the workspace's (srun: the last of a flag wins).
//
// Only a rule whose work is the processes it starts (Rule::placeable(): exec,
// measure, pretrain, finetune, evaluate) can run them elsewhere; the others
// (download, tokenize) work inside benchmake, so they run where it runs.
//
// The generator resolves each target's Placement (PlaceTarget) into its
// .params; `benchmake step` hands it to the executor (executor.h) and the rule
// (StepContext::placement), whose commands go through PlaceCommand() and whose
// ranks start through the launcher it names (rules/launch/launcher.h).
//
// Thread safety: values and pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/command_runner.h"
#include "base/result.h"

namespace bm::engine {

struct ParamSpec;  // engine/rule.h

struct SlurmOptions {
  std::string partition;               // "": the cluster's default
  std::string account;                 // "": the user's default
  std::string time;                    // a Slurm time limit ("90", "4:00:00", "1-0"); "": default
  int ranks_per_node = 8;              // ranks (GPUs) one node takes
  std::vector<std::string> srun_args;  // more srun flags
  std::string steps = "gpu";           // workspace only: which steps Slurm runs ("gpu", "all")
  int retries = 2;                     // workspace only: reruns of a preempted or node-failed job
};

struct MpirunOptions {
  std::string hostfile;  // absolute once resolved by the generator; "": mpirun's default
  std::vector<std::string> mpirun_args;
};

struct Placement {
  std::string executor = "local";  // where the step's processes run: "local" | "slurm"
  std::string launcher = "local";  // who starts several ranks: "local" | "mpirun" | "slurm"
  SlurmOptions slurm;              // executor == "slurm"
  MpirunOptions mpirun;            // launcher == "mpirun"
  // Set by the executor for one run of a step: the name of every Slurm job it
  // starts (srun --job-name), which is how they are found and cancelled.
  std::string job_name;
};

// One [benchmake] key of the placement: "executor" or "launcher".
// kInvalidArgument naming the accepted values.
Status ApplyPlacementSetting(Placement& p, std::string_view key, const nlohmann::json& value);
bool IsPlacementSetting(std::string_view key);

// One key of [benchmake.slurm] (workspace = true) or of a target's `slurm`
// table (false: steps and retries are the workspace's only). kInvalidArgument
// for an unknown key (with the nearest one), a wrong type or a bad value.
Status ApplySlurmSetting(SlurmOptions& o, std::string_view key, const nlohmann::json& value,
                         bool workspace);
// One key of [benchmake.mpirun].
Status ApplyMpirunSetting(MpirunOptions& o, std::string_view key, const nlohmann::json& value);

// What .params keeps for the step, and back.
nlohmann::json PlacementToJson(const Placement& p);
Result<Placement> PlacementFromJson(const nlohmann::json& j);

// The target parameters every placeable rule takes besides its own
// (`executor`, `slurm`); not in the key.
const std::vector<ParamSpec>& PlacementParams();

// Load-time check of a target's `executor` and `slurm` parameters: each error
// is (parameter, message). A rule that is not placeable takes neither.
std::vector<std::pair<std::string, std::string>> CheckTargetPlacement(bool placeable,
                                                                      std::string_view rule,
                                                                      const nlohmann::json& params);

// The placement of one target: the workspace's, with the executor chosen for
// this step (its `executor` parameter, else Slurm for the steps
// [benchmake.slurm] steps names, else local) and its `slurm` table merged in.
// The launcher: srun for a step of several `ranks` under Slurm, the
// workspace's for one here, "local" for a single process. Precondition:
// CheckTargetPlacement found nothing.
Placement PlaceTarget(const Placement& workspace, bool placeable, int gpus, int ranks,
                      const nlohmann::json& params);

// True when the step's GPUs are this machine's: leased from the allocator
// (gpu_allocator.h), counted by the GPU check and ninja's gpu pool. Slurm
// steps get theirs from Slurm; mpirun ranks use their hosts'.
bool UsesLocalGpus(const Placement& p);

// The command that runs `cmd` where the step is placed: `cmd` itself on this
// machine; under Slurm, srun with one task and `gpus` GPUs (engine/slurm.h).
Command PlaceCommand(const Placement& p, Command cmd, int gpus);

}  // namespace bm::engine
