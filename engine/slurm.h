// Slurm, as the Slurm executor uses it (docs/CLUSTER.md): the srun command
// that runs a step's processes on the cluster, and what Slurm says when such a
// job ends by Slurm's doing (a time limit, scancel, preemption, a lost node).
//
// srun makes its own job, or, when benchmake runs inside an allocation
// (SLURM_JOB_ID is set: salloc, sbatch), a step of that job. Either way srun
// streams the tasks' output back (into the step log) and returns when they
// end. A job of ours is named (--job-name) so that it can be found (squeue)
// and cancelled (scancel) by name; a step inside someone's allocation is never
// cancelled by name: srun --quit-on-interrupt ends it on Ctrl-C.
//
// What Slurm said, in order of trust: squeue's record of our job (JobState and
// Reason; Slurm keeps a finished job's record MinJobAge seconds, 300 by
// default, and no accounting database is needed), else srun's and
// slurmstepd's own lines in the log ("*** STEP 12.0 ON n1 CANCELLED AT ... DUE
// TO TIME LIMIT ***", "srun: error: Unable to allocate resources: ...").
//
// Thread safety: pure functions, except QuerySlurmJob, which runs squeue.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/command_runner.h"
#include "base/filesystem.h"
#include "engine/placement.h"

namespace bm::engine {

// What one srun asks Slurm for.
struct SrunShape {
  int nodes = 1;
  int tasks = 1;
  int tasks_per_node = 0;  // 0: srun's choice
  int gpus_per_task = 0;
  // With GPUs: every task sees every GPU its node's tasks got (--gpu-bind=none)
  // and drives entry LOCAL_RANK, as a rank started by the local launcher does.
  bool gpus_shared_on_node = false;
  int cpus_per_task = 0;  // 0: Slurm's default (1)
};

// `world` ranks at `ranks_per_node` per node: all on one node when they fit,
// else whole nodes of ranks_per_node each. kInvalidArgument when they do not
// fill whole nodes (6 ranks at 4 per node), naming both numbers.
Result<SrunShape> RankShape(int world, int ranks_per_node, bool gpu, int cpus_per_task);

// True when this process runs inside a Slurm allocation (SLURM_JOB_ID is set).
bool InSlurmAllocation();

// A job name for one run of `what` (a target, "probe"): "bm.WHAT.<8 hex>".
std::string NewSlurmJobName(std::string_view what);

// `inner` as srun runs it:
//   srun --job-name=NAME --nodes=N --ntasks=T [--ntasks-per-node=P]
//        [--gpus-per-task=G [--gpu-bind=none]] [--cpus-per-task=C]
//        [--partition=..] [--account=..] [--time=..] --export=ALL --input=none
//        --quit-on-interrupt --kill-on-bad-exit=1 [srun_args...] ARGV...
// srun runs in inner.cwd and exports inner.env (with ours) to the tasks, which
// start in the same directory on their nodes. inner's log, echo and timeout
// apply to srun. Outside an allocation, on_interrupt is `scancel --name=NAME`.
Command SrunCommand(const SlurmOptions& options, const std::string& job_name,
                    const SrunShape& shape, Command inner);

// How a Slurm job (or step) ended, as far as it is Slurm's doing.
struct SlurmEnd {
  std::string id;        // "12", or "12.0" for a step; "" when unknown
  std::string state;     // TIMEOUT, CANCELLED, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL,
                         // DEADLINE, FAILED, COMPLETED...; "" when nothing is known
  std::string reason;    // Slurm's reason (TimeLimit), or what srun was refused
  bool refused = false;  // srun got no job or step at all (a bad partition, too many nodes)

  // The job did not end by its program's own exit: Slurm ended it or refused it.
  bool ended_by_slurm() const;
  // Slurm is done with it (COMPLETED, FAILED, or one of ended_by_slurm's
  // states); not while it is RUNNING or COMPLETING.
  bool final() const;
  // Worth running again (the resume checkpoint carries the progress):
  // PREEMPTED, NODE_FAIL, BOOT_FAIL.
  bool retryable() const;
  // "Slurm job 12 ended TIMEOUT (TimeLimit)", "Slurm refused the job: Invalid
  // partition name specified", "" when nothing is known.
  std::string Describe() const;
};

// What srun and slurmstepd printed into `log` (the last verdict wins).
SlurmEnd ParseSrunOutput(std::string_view log);

// squeue's record of the newest job named `job_name`, or nullopt when Slurm
// knows none (never started, or forgotten after MinJobAge). A job that srun
// has just left may still be COMPLETING: asked again every 0.2 s, for at most
// `settle_s`, until its state is final. `scratch` is a directory for squeue's
// output.
std::optional<SlurmEnd> QuerySlurmJob(CommandRunner& runner, Filesystem& fs,
                                      const std::string& job_name, const std::string& scratch,
                                      double settle_s = 10);

}  // namespace bm::engine
