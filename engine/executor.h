// Executor: how a stale step's rule runs (engine/step.h wraps Rule::Run in
// it). ninja stays the scheduler of the graph; the executor only decides
// where one step's processes go (docs/CLUSTER.md):
//
//   local  this machine. A step that needs GPUs first takes them from the
//          allocator (gpu_allocator.h, held until the executor goes away) and
//          sets CUDA_VISIBLE_DEVICES; its ranks start through the workspace's
//          launcher (local processes, or mpirun with a hostfile).
//   slurm  Slurm places them: every command the rule runs becomes a srun job
//          (or a step of the allocation benchmake runs in) that asks for the
//          nodes, tasks and GPUs it needs (engine/slurm.h); nothing is leased
//          here. The rule's directories (scratch, out, resume, the ranks'
//          rendezvous) are the workspace's, so the workspace must be on a
//          filesystem every node sees at the same path; the step then ingests
//          what the node wrote into the cache, as always. A job that Slurm
//          ends (time limit, scancel, preemption, a lost node) fails the step
//          with Slurm's verdict, and a preempted or node-failed one may run
//          again ([benchmake.slurm] retries), resuming from its checkpoint.
//
// Thread safety: one Executor per step process.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "engine/rule.h"
#include "engine/workspace.h"

namespace bm::engine {

// What an executor knows of a failed run.
struct ExecutorVerdict {
  std::string why;         // e.g. "Slurm job 12 ended TIMEOUT (TimeLimit)"; "" when nothing
  bool retryable = false;  // running the rule again may succeed (preempted, node lost)
};

class Executor {
 public:
  virtual ~Executor() = default;

  // Readies `ctx` for one run of the rule: its placement (under Slurm with a
  // fresh job name) and its GPUs. Errors: the GPUs cannot be had.
  virtual Status Prepare(StepContext& ctx) = 0;

  // After the rule failed: what the executor can add (what Slurm said about
  // the run's job), given what the run wrote into the step log.
  virtual ExecutorVerdict Explain(const StepContext& ctx, std::string_view log_text) = 0;

  // How many times a retryable failure is run again.
  virtual int retries() const { return 0; }
};

// The executor of a step placed as `placement` that needs `gpus` GPUs of the
// `machine_gpus` this machine has. Waiting for GPUs is said on `console`.
std::unique_ptr<Executor> MakeExecutor(const Workspace& ws, const Placement& placement, int gpus,
                                       int machine_gpus, std::ostream* console);

}  // namespace bm::engine
