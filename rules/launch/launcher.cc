#include "rules/launch/launcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/signal_name.h"
#include "rules/launch/local_launcher.h"
#include "rules/launch/mpirun_launcher.h"
#include "rules/launch/slurm_launcher.h"
#include "trainer/dist/exit_status.h"
#include "trainer/dist/heartbeat.h"
#include "trainer/dist/rank_env.h"

namespace bm::launch {
namespace {

std::string HowItEnded(const CommandResult& r) {
  // Ranks have no time limit of their own: only a straggler times out.
  if (r.timed_out) return "timed out (still running long after another rank had finished)";
  if (r.term_signal) return "was killed by " + SignalName(r.term_signal);
  return fmt::format("exited with status {}", r.exit_code);
}

// A rank's end: HowItEnded, and what the trainer's "peer lost" status means.
std::string HowRankEnded(const CommandResult& r) {
  if (LostAPeer(r))
    return HowItEnded(r) + " (it lost a peer, and no rank was seen failing by itself)";
  return HowItEnded(r);
}

// The last `n` lines of `text` (all of it when shorter).
std::string_view LastLines(std::string_view text, int n) {
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  for (int lines = 0; lines < n; ++lines) {
    size_t nl = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
    if (nl == std::string_view::npos) return text;
    pos = nl;
  }
  return text.substr(pos + 1);
}

// "\nlast lines of WHAT (PATH):\n..." with the last `n` lines of the log, or
// why there are none.
std::string LogTail(const std::string& what, const std::string& path, Filesystem& fs, int n) {
  Result<std::string> log = fs.ReadFile(path);
  if (!log.ok())
    return fmt::format("\n({} {} cannot be read: {})", what, path, log.status().message());
  if (log->empty()) return fmt::format("\n({} {} is empty)", what, path);
  std::string text = fmt::format("\nlast lines of {} ({}):\n{}", what, path, LastLines(*log, n));
  if (text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string RankLogPath(const LaunchSpec& spec, int rank) {
  if (rank == 0) return spec.log_path;
  std::string_view base = spec.log_path;
  if (base.ends_with(".log")) base.remove_suffix(4);
  return fmt::format("{}.rank-{}.log", base, rank);
}

Result<std::unique_ptr<Launcher>> MakeLauncher(const engine::Placement& placement,
                                               CommandRunner& runner, Filesystem& fs) {
  const std::string& name = placement.launcher;
  if (name == "local") return std::unique_ptr<Launcher>(new LocalLauncher(runner));
  if (name == "slurm")
    return std::unique_ptr<Launcher>(
        new SlurmLauncher(runner, fs, placement.slurm, placement.job_name));
  if (name == "mpirun")
    return std::unique_ptr<Launcher>(new MpirunLauncher(runner, fs, placement.mpirun));
  return Errorf(ErrorCode::kInvalidArgument, "unknown launcher '{}' (known: local, mpirun, slurm)",
                name);
}

bool LostAPeer(const CommandResult& r) {
  return r.term_signal == 0 && !r.timed_out && r.exit_code == train::dist::kExitPeerLost;
}

std::vector<std::string> RankLogWrapper(const LaunchSpec& spec, std::string_view rank_var) {
  std::string_view base = spec.log_path;
  if (base.ends_with(".log")) base.remove_suffix(4);
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      fmt::format("r=${{{}:-0}}; if [ \"$r\" != 0 ]; then exec >\"$0.rank-$r.log\" 2>&1; fi; "
                  "exec \"$@\"",
                  rank_var),
      std::string(base)};
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return argv;
}

std::map<std::string, std::string> SharedRankEnv(const LaunchSpec& spec) {
  std::map<std::string, std::string> env = spec.env;
  env[train::dist::kEnvRendezvous] = spec.rendezvous;
  env[train::dist::kEnvTimeout] = fmt::format("{}", spec.collective_timeout_s);
  for (const char* v : {train::dist::kEnvRank, train::dist::kEnvWorldSize,
                        train::dist::kEnvLocalRank, train::dist::kEnvLocalWorldSize})
    env[v] = "";
  return env;
}

Result<LaunchResult> RunRanksAsOneCommand(CommandRunner& runner, Filesystem& fs,
                                          const LaunchSpec& spec, const Command& cmd,
                                          RankEndParser parse, std::string_view unnamed) {
  BM_ASSIGN_OR_RETURN(FileInfo before, fs.Stat(spec.log_path));
  BM_ASSIGN_OR_RETURN(CommandResult ended, runner.Run(cmd));
  LaunchResult r;
  r.command = cmd.argv;
  for (int rank = 0; rank < spec.world_size; ++rank)
    r.ranks.push_back({rank, CommandResult{}, RankLogPath(spec, rank), ""});
  if (ended.success()) return r;
  std::vector<std::pair<int, CommandResult>> said;
  Result<std::string> log = fs.ReadFile(spec.log_path);  // what this command added
  if (log.ok() && log->size() >= before.size)
    said = parse(std::string_view(*log).substr(before.size));
  std::vector<std::pair<int, CommandResult>> ends;  // each rank once: the first word stands
  std::vector<bool> named(r.ranks.size(), false);
  for (const auto& [rank, how] : said) {
    if (rank < 0 || rank >= spec.world_size || named[static_cast<size_t>(rank)]) continue;
    named[static_cast<size_t>(rank)] = true;
    ends.emplace_back(rank, how);
  }
  if (ends.empty()) {
    r.command_failed = true;
    r.first_failure = 0;
    r.ranks[0].result = ended;
    r.ranks[0].result.stopped = false;
    return r;
  }
  // The command lists the ends in the order they reached it: a rank that only
  // lost a peer may come before the rank it lost.
  r.first_failure = ends[0].first;
  for (const auto& [rank, how] : ends)
    if (!LostAPeer(how)) {
      r.first_failure = rank;
      break;
    }
  for (const auto& [rank, how] : ends) {
    CommandResult& o = r.ranks[static_cast<size_t>(rank)].result;
    o = how;
    o.stopped = rank != r.first_failure && !LostAPeer(how);
  }
  for (RankOutcome& o : r.ranks)
    if (!named[static_cast<size_t>(o.rank)]) o.unreported = std::string(unnamed);
  return r;
}

std::vector<UnresponsiveRank> FindUnresponsiveRanks(Filesystem& fs, const LaunchSpec& spec) {
  std::vector<std::pair<int, int64_t>> beats;  // rank, last heartbeat (mtime ns)
  int64_t newest = 0;
  for (int rank = 0; rank < spec.world_size; ++rank) {
    Result<FileInfo> info = fs.Stat(train::dist::HeartbeatPath(spec.rendezvous, rank));
    if (!info.ok() || !info->exists) continue;
    beats.emplace_back(rank, info->mtime_ns);
    newest = std::max(newest, info->mtime_ns);
  }
  std::vector<UnresponsiveRank> silent;
  for (const auto& [rank, mtime_ns] : beats) {
    const double behind_s = static_cast<double>(newest - mtime_ns) / 1e9;
    if (behind_s > kUnresponsiveAfterS) silent.push_back({rank, behind_s});
  }
  return silent;
}

std::string DescribeRankEnd(const RankOutcome& rank, int first_failure) {
  if (!rank.unreported.empty()) return rank.unreported;
  if (rank.result.success()) return "succeeded";
  if (rank.result.stopped) {
    std::string how = rank.result.term_signal
                          ? "killed by " + SignalName(rank.result.term_signal)
                          : fmt::format("exited with status {}", rank.result.exit_code);
    return fmt::format("was stopped after rank {} failed: {}", first_failure, how);
  }
  if (rank.rank != first_failure && LostAPeer(rank.result))
    return fmt::format("lost a peer after rank {} failed ({})", first_failure,
                       HowItEnded(rank.result));
  return rank.rank == first_failure ? HowRankEnded(rank.result) : HowItEnded(rank.result);
}

std::string DescribeFailure(const LaunchResult& result, Filesystem& fs, int tail_lines) {
  if (result.success() || result.first_failure >= static_cast<int>(result.ranks.size()))
    return "every rank succeeded";
  const RankOutcome& failed = result.ranks[static_cast<size_t>(result.first_failure)];
  if (result.command_failed) {
    std::string text = fmt::format("{} {} without naming a rank that failed",
                                   result.command.empty() ? "the launcher" : result.command[0],
                                   HowItEnded(failed.result));
    return text + LogTail("the step log", failed.log_path, fs, 2 * tail_lines);
  }
  std::vector<int> stopped, lost;
  for (const RankOutcome& r : result.ranks)
    if (r.result.stopped)
      stopped.push_back(r.rank);
    else if (r.rank != failed.rank && LostAPeer(r.result))
      lost.push_back(r.rank);
  std::string text;
  for (const UnresponsiveRank& u : result.unresponsive)
    text += fmt::format(
        "rank {} of {} stopped answering (hung: its heartbeat stopped {:.0f} s "
        "before the other ranks'; stopped by a signal, or its machine froze); ",
        u.rank, result.ranks.size(), u.silent_s);
  if (!result.unresponsive.empty()) text += "then ";
  text += fmt::format("rank {} of {} {}", failed.rank, result.ranks.size(),
                      HowRankEnded(failed.result));
  if (!lost.empty())
    text += fmt::format("; {} {} lost a peer (exit status {})", lost.size() == 1 ? "rank" : "ranks",
                        fmt::join(lost, ", "), train::dist::kExitPeerLost);
  if (!stopped.empty())
    text += fmt::format("; {} {} {} stopped", stopped.size() == 1 ? "rank" : "ranks",
                        fmt::join(stopped, ", "), stopped.size() == 1 ? "was" : "were");
  return text + LogTail(fmt::format("rank {}'s log", failed.rank), failed.log_path, fs, tail_lines);
}

}  // namespace bm::launch
