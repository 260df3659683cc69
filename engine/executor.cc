#include "engine/executor.h"

#include <cstdlib>

#include "engine/gpu_allocator.h"
#include "engine/slurm.h"

namespace bm::engine {
namespace {

class LocalExecutor : public Executor {
 public:
  LocalExecutor(const Placement& placement, int gpus, int machine_gpus, std::ostream* console)
      : placement_(placement), gpus_(gpus), machine_gpus_(machine_gpus), console_(console) {}

  Status Prepare(StepContext& ctx) override {
    ctx.placement = placement_;
    if (gpus_ > 0 && UsesLocalGpus(placement_)) {
      BM_ASSIGN_OR_RETURN(lease_, AcquireGpus(gpus_, machine_gpus_, GpuLockDir(), console_));
      ctx.gpus = lease_.ids;
      ::setenv("CUDA_VISIBLE_DEVICES", lease_.VisibleDevices().c_str(), 1);
    }
    return Status::Ok();
  }

  ExecutorVerdict Explain(const StepContext&, std::string_view) override { return {}; }

 private:
  Placement placement_;
  int gpus_, machine_gpus_;
  std::ostream* console_;
  GpuLease lease_;
};

class SlurmExecutor : public Executor {
 public:
  SlurmExecutor(const Workspace& ws, const Placement& placement) : ws_(ws), placement_(placement) {}

  Status Prepare(StepContext& ctx) override {
    ctx.placement = placement_;
    ctx.placement.job_name = NewSlurmJobName(ctx.target);
    ctx.gpus.clear();
    return Status::Ok();
  }

  // Slurm's record of our job when it has one; inside someone's allocation
  // (a step of it, never queried by name) or once the record is gone, what
  // srun printed into the log.
  ExecutorVerdict Explain(const StepContext& ctx, std::string_view log_text) override {
    SlurmEnd end = ParseSrunOutput(log_text);
    if (!InSlurmAllocation() && !end.refused) {
      std::optional<SlurmEnd> job =
          QuerySlurmJob(*ws_.runner, *ws_.fs, ctx.placement.job_name, ctx.scratch_dir);
      if (job && job->final()) end = *job;
    }
    if (!end.ended_by_slurm()) return {};
    return {end.Describe(), end.retryable()};
  }

  int retries() const override { return placement_.slurm.retries; }

 private:
  const Workspace& ws_;
  Placement placement_;
};

}  // namespace

std::unique_ptr<Executor> MakeExecutor(const Workspace& ws, const Placement& placement, int gpus,
                                       int machine_gpus, std::ostream* console) {
  if (placement.executor == "slurm") return std::make_unique<SlurmExecutor>(ws, placement);
  return std::make_unique<LocalExecutor>(placement, gpus, machine_gpus, console);
}

}  // namespace bm::engine
