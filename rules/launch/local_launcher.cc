#include "rules/launch/local_launcher.h"

#include <fmt/format.h>

#include "trainer/dist/rank_env.h"

namespace bm::launch {
namespace {

// The rank whose failure ended the run. Ranks the runner found failed at one
// poll (not stopped by it) ended within milliseconds of each other, so its
// order says little: a rank killed by a signal (SIGKILL, SIGSEGV, the OOM
// killer) failed first, then one that failed by itself; those that exited
// with kExitPeerLost, or with 1 on "Connection reset by peer" (a command that
// does not say it lost a peer), had lost it.
int FirstCause(const GroupResult& group) {
  const int seen = group.first_failure;
  if (seen < 0 || group.results.at(static_cast<size_t>(seen)).term_signal != 0) return seen;
  for (size_t rank = 0; rank < group.results.size(); ++rank) {
    const CommandResult& r = group.results[rank];
    if (r.term_signal != 0 && !r.stopped && !r.timed_out) return static_cast<int>(rank);
  }
  if (!LostAPeer(group.results.at(static_cast<size_t>(seen)))) return seen;
  // The first failure seen only lost a peer: the rank it lost closed its
  // connections as it ended, and may have been reaped only after the runner
  // had told it to stop. benchmake-train does not catch SIGTERM, so a rank
  // that then exited with a status of its own had failed by itself.
  for (size_t rank = 0; rank < group.results.size(); ++rank) {
    const CommandResult& r = group.results[rank];
    if (r.term_signal == 0 && r.exit_code != 0 && !r.timed_out && !LostAPeer(r))
      return static_cast<int>(rank);
  }
  return seen;
}

}  // namespace

Result<LaunchResult> LocalLauncher::Launch(const LaunchSpec& spec) {
  if (spec.world_size < 1)
    return Errorf(ErrorCode::kInvalidArgument, "a launch needs at least one rank, not {}",
                  spec.world_size);
  if ((spec.gpu || !spec.gpus.empty()) && static_cast<int>(spec.gpus.size()) != spec.world_size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} ranks on this machine need {} GPUs, one each, but the step holds {}",
                  spec.world_size, spec.world_size, spec.gpus.size());
  const std::string visible_devices = fmt::format("{}", fmt::join(spec.gpus, ","));
  std::vector<Command> commands;
  for (int rank = 0; rank < spec.world_size; ++rank) {
    train::dist::RankEnv env;
    env.rank = rank;
    env.world_size = spec.world_size;
    env.local_rank = rank;
    env.local_world_size = LocalWorldSize(spec.world_size);
    env.rendezvous = spec.rendezvous;
    env.timeout_s = spec.collective_timeout_s;
    Command c;
    c.argv = spec.argv;
    c.cwd = spec.cwd;
    c.env = spec.env;
    for (auto& [k, v] : train::dist::RankEnvVars(env)) c.env[k] = v;
    if (!spec.gpus.empty()) c.env["CUDA_VISIBLE_DEVICES"] = visible_devices;
    c.log_path = RankLogPath(spec, rank);
    c.echo_to_terminal = rank == 0 && spec.echo_rank0;
    commands.push_back(std::move(c));
  }
  GroupOptions options;
  options.grace_seconds = spec.grace_s;
  options.straggler_seconds = spec.collective_timeout_s;
  BM_ASSIGN_OR_RETURN(GroupResult group, runner_.RunGroup(commands, options));
  LaunchResult result;
  result.first_failure = FirstCause(group);
  for (int rank = 0; rank < spec.world_size; ++rank)
    result.ranks.push_back({rank, group.results.at(static_cast<size_t>(rank)),
                            commands[static_cast<size_t>(rank)].log_path, ""});
  if (result.first_failure >= 0)  // the cause was not stopped, whenever it was reaped
    result.ranks[static_cast<size_t>(result.first_failure)].result.stopped = false;
  return result;
}

}  // namespace bm::launch
