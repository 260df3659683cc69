// LocalLauncher: every rank a process on this machine (LOCAL_RANK = RANK),
// started together through CommandRunner::RunGroup, so the first rank to fail
// stops the others (SIGTERM, SIGKILL LaunchSpec::grace_s later) and a rank
// still running collective_timeout_s after another rank finished is stopped
// as hung. With GPUs, the spec must hold exactly one per rank (the step's
// lease from engine/gpu_allocator.h); every rank sees all of them in
// CUDA_VISIBLE_DEVICES and drives entry LOCAL_RANK.
#pragma once

#include "rules/launch/launcher.h"

namespace bm::launch {

class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(CommandRunner& runner) : runner_(runner) {}

  std::string_view name() const override { return "local"; }
  int LocalWorldSize(int world_size) const override { return world_size; }
  Result<LaunchResult> Launch(const LaunchSpec& spec) override;

 private:
  CommandRunner& runner_;
};

}  // namespace bm::launch
