#include "engine/build.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "base/file_lock.h"
#include "base/nearest_name.h"
#include "base/signal_name.h"
#include "base/subprocess_runner.h"
#include "base/terminal.h"
#include "cache/run_health.h"
#include "engine/clean_stamp.h"
#include "engine/generate.h"
#include "engine/out_check.h"
#include "engine/plan.h"
#include "engine/target_graph.h"
#include "engine/target_state.h"

namespace bm::engine {
namespace {

constexpr const char* kLockFdEnv = "BENCHMAKE_LOCK_FD";

Result<FileLock> LockWorkspace(const Workspace& ws) {
  BM_TRY(ws.fs->MakeDirs(ws.StateDir()));
  std::string path = ws.StateDir() + "/lock";
  BM_TRY(RemoveDirectoryWhereStateBelongs(ws, path, "the workspace's lock"));
  FileLock lock;
  BM_ASSIGN_OR_RETURN(bool got, FileLock::TryLock(path, &lock));
  if (!got) {
    std::string holder =
        ws.fs->ReadFile(path + ".pid").ok() ? *ws.fs->ReadFile(path + ".pid") : "?";
    while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    std::fprintf(stderr,
                 "benchmake: another build of this workspace is running (pid %s, or the steps "
                 "it started); waiting...\n",
                 holder.c_str());
    auto start = std::chrono::steady_clock::now();
    BM_ASSIGN_OR_RETURN(lock, FileLock::Lock(path));
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "benchmake: waited %.1fs for another build of this workspace (pid %s) to finish\n",
                 waited, holder.c_str());
  }
  (void)ws.fs->WriteFileAtomic(path + ".pid", std::to_string(::getpid()) + "\n", false,
                               /*durable=*/false);
  return lock;
}

}  // namespace

Status BuildWithNinja(const Workspace& ws, const BuildOptions& options) {
  Result<std::string> ninja = FindOnPath("ninja");
  if (!ninja.ok())
    return Errorf(ErrorCode::kNotFound, "{}; install it (Debian: apt-get install ninja-build)",
                  ninja.status().message());
  // A directory without a BENCHFILE is no workspace: refused before the lock
  // would leave a .benchmake/ there.
  BM_ASSIGN_OR_RETURN(FileInfo benchfile, ws.fs->Stat(ws.benchfile));
  if (!benchfile.exists)
    return Errorf(ErrorCode::kInvalidArgument, "cannot read {}: no such file", ws.benchfile);
  BM_ASSIGN_OR_RETURN(FileLock lock, LockWorkspace(ws));
  GenerateOptions generate;
  generate.executor = options.executor;
  BM_ASSIGN_OR_RETURN(GenerateResult gen, Generate(ws, generate));
  BM_TRY(CheckOutDirs(ws, gen.targets));
  Command cmd;
  cmd.argv = {*ninja, "-f", "build.ninja"};
  cmd.cwd = ws.StateDir();
  std::optional<int> jobs = options.jobs;
  if (!jobs && gen.jobs > 0) jobs = gen.jobs;
  if (jobs) {
    cmd.argv.push_back("-j");
    cmd.argv.push_back(std::to_string(*jobs));
  }
  if (options.keep_going != 1) {
    cmd.argv.push_back("-k");
    cmd.argv.push_back(std::to_string(options.keep_going));
  }
  if (options.dry_run) cmd.argv.push_back("-n");
  // Nothing changed since every target was last built, and so planned: no plan
  // to check, no ninja, no process.
  auto known = [&](const std::string& t) {
    return std::find(gen.targets.begin(), gen.targets.end(), t) != gen.targets.end();
  };
  if (gen.fast_path && !options.remeasure &&
      std::all_of(options.targets.begin(), options.targets.end(), known) &&
      CleanStampHolds(ws, gen.targets)) {
    std::fprintf(stderr, "benchmake: no work to do.\n");
    return Status::Ok();
  }
  // Ninja will run: what it reads that a hand removed or damaged is written again.
  if (gen.fast_path) {
    generate.look_past_stamp = true;
    BM_ASSIGN_OR_RETURN(gen, Generate(ws, generate));
  }
  // Unknown names and targets that cannot run here fail before anything runs.
  BM_TRY(PlanBuild(ws, options.targets, gen.targets).status());
  BM_TRY(ForgetCleanStamp(ws));
  BM_ASSIGN_OR_RETURN(const std::string generated, GeneratedState(ws, gen.targets));
  BM_TRY(RemoveDirectoryWhereStateBelongs(ws, ws.StateDir() + "/.ninja_log", "ninja's log"));
  BM_TRY(RemoveDirectoryWhereStateBelongs(ws, ws.StateDir() + "/.ninja_deps", "ninja's deps log"));
  for (const std::string& t : options.targets) cmd.argv.push_back(fmt::format("t/{}.out", t));
  // Every step of this build shares one remote-cache verdict (cache/run_health.h).
  cmd.env["BENCHMAKE_RUN_ID"] = cache::RunHealth::NewRunId();
  cmd.env[kColorEnv] = options.color ? "always" : "never";
  cmd.env[options.color ? "CLICOLOR_FORCE" : "NO_COLOR"] = "1";
  // Ninja and its steps hold the workspace lock too: while a killed build's
  // steps still stop, the next build waits for them rather than run the same
  // steps in the same scratch and out/ directories beside them.
  BM_ASSIGN_OR_RETURN(FileLock shared, lock.Inheritable());
  cmd.env[kLockFdEnv] = std::to_string(shared.fd());
  // Killed with SIGKILL, this build's ninja is interrupted by its guardian,
  // and stops its steps as on Ctrl-C: each cancels its Slurm job, and none
  // runs on unseen.
  cmd.interrupt_when_orphaned = true;
  // Interrupted, ninja waits for its steps, which give their commands the
  // default grace before killing what is left: wait longer than that.
  cmd.interrupt_grace_seconds = 2 * Command().interrupt_grace_seconds;
  Result<CommandResult> ran = ws.runner->Run(cmd);
  shared.Release();
  BM_ASSIGN_OR_RETURN(CommandResult r, std::move(ran));
  if (r.term_signal)  // killed from outside (the OOM killer, kill -9): its steps were stopped
    return Errorf(ErrorCode::kFailed, "build failed: ninja was killed by {}",
                  SignalName(r.term_signal));
  if (!r.success()) return Errorf(ErrorCode::kFailed, "build failed (ninja exit {})", r.exit_code);
  if (options.targets.empty() && !options.dry_run) {
    Result<std::string> now = GeneratedState(ws, gen.targets);
    if (now.ok() && *now == generated) BM_TRY(WriteCleanStamp(ws, gen.targets));
  }
  if (options.remeasure && !options.dry_run) {
    StepOptions step;
    step.remeasure = true;
    step.console = &std::cout;
    step.color = options.color;
    for (const std::string& t : options.targets) BM_TRY(RunStep(ws, t, step).status());
  }
  return Status::Ok();
}

void KeepWorkspaceLockFromCommands() {
  const char* fd = std::getenv(kLockFdEnv);
  if (fd && *fd) FileLock::KeepFromChildren(std::atoi(fd));
  ::unsetenv(kLockFdEnv);  // names nothing in the commands
}

Result<InProcessSummary> BuildInProcess(const Workspace& ws, const StepOptions& options,
                                        const std::vector<std::string>& targets) {
  BM_ASSIGN_OR_RETURN(GenerateResult gen, Generate(ws));
  BM_TRY(CheckOutDirs(ws, gen.targets));
  BM_ASSIGN_OR_RETURN(std::vector<std::string> plan, PlanBuild(ws, targets, gen.targets));
  InProcessSummary summary;
  for (const std::string& t : plan) {
    BM_ASSIGN_OR_RETURN(StepReport r, RunStep(ws, t, options));
    summary.outcomes[t] = r.outcome;
    summary.ran += r.outcome == StepOutcome::kRan;
    summary.restored += r.outcome == StepOutcome::kRestored;
    if (r.remeasured > 0) summary.remeasured[t] = r.remeasured;
  }
  return summary;
}

}  // namespace bm::engine
