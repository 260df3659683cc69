// SlurmCluster: a real Slurm on this machine for one test — munged with its
// own key and socket, slurmctld and one slurmd (node "localhost", CPU-only) —
// in a fresh temporary directory, on free loopback ports, with the slurm.conf
// of docs/CLUSTER.md ("The cluster the tests start"). Clients (srun, squeue,
// and benchmake through them) find it through SLURM_CONF:
//
//   auto cluster = bm::testing::SlurmCluster::Start();
//   if (!cluster.ok()) GTEST_SKIP() << cluster.status().message();
//   (*cluster)->ExportEnv();  // SLURM_CONF for this process and its children
//
// Why this configuration works in containers: no cgroups anywhere (tasks are
// tracked by process group, proctrack/pgid; never confined, task/none; no
// job accounting), no accounting database (squeue keeps finished jobs for
// MinJobAge), no GRES, and SlurmdParameters=config_overrides, so that the
// node's configured CPUs are taken as they are written.
//
// Partitions: "debug" (the default) and "urgent", whose jobs preempt debug's
// (PreemptMode=CANCEL: the preempted job ends PREEMPTED). Time limits are
// enforced with no grace (OverTimeLimit=0) by slurmctld's check every 30 s, so
// a 1-minute limit ends a job 60 to 90 s after it started.
//
// The daemons run in the foreground as children of the test and die with it
// (PR_SET_PDEATHSIG); the destructor cancels every job left, waits for them,
// stops the daemons and removes the directory — also after a failed test.
// Start() fails with kUnsupported when Slurm or munge is not installed and
// with kUnavailable when a daemon does not start or the node does not come up
// (the message holds the daemons' logs): a test skips on both, saying why.
//
// Not thread-safe; one per test.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"

namespace bm::testing {

struct SlurmClusterOptions {
  int cpus = 4;  // the node's CPUs, as slurm.conf says (config_overrides)
};

class SlurmCluster {
 public:
  static Result<std::unique_ptr<SlurmCluster>> Start(SlurmClusterOptions options = {});
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& conf() const { return conf_; }  // the slurm.conf path: SLURM_CONF
  const std::string& dir() const { return dir_; }
  // Sets SLURM_CONF for this process (and so for every process it starts);
  // the destructor unsets it.
  void ExportEnv() const;
  // Runs `shell` with SLURM_CONF set; its stdout, or kFailed with its exit status.
  Result<std::string> Shell(const std::string& shell) const;
  // The last lines of slurmctld's and slurmd's logs, for failure messages.
  std::string Logs() const;

 private:
  SlurmCluster() = default;
  Status Launch(const SlurmClusterOptions& options);
  void Stop();

  std::string dir_, conf_;
  pid_t munged_ = -1, slurmctld_ = -1, slurmd_ = -1;
};

}  // namespace bm::testing
