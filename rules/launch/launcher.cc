#include "rules/launch/launcher.h"

#include <fmt/format.h>

#include <cstring>

#include "rules/launch/local_launcher.h"

namespace bm::launch {
namespace {

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? fmt::format("signal {} (SIG{})", sig, abbrev) : fmt::format("signal {}", sig);
}

std::string HowItEnded(const CommandResult& r) {
  // Ranks have no time limit of their own: only a straggler times out.
  if (r.timed_out) return "timed out (still running long after another rank had finished)";
  if (r.term_signal) return "was killed by " + SignalName(r.term_signal);
  return fmt::format("exited with status {}", r.exit_code);
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

}  // namespace

std::string RankLogPath(const LaunchSpec& spec, int rank) {
  if (rank == 0) return spec.log_path;
  std::string_view base = spec.log_path;
  if (base.ends_with(".log")) base.remove_suffix(4);
  return fmt::format("{}.rank-{}.log", base, rank);
}

Result<std::unique_ptr<Launcher>> MakeLauncher(std::string_view name, CommandRunner& runner) {
  if (name == "local") return std::unique_ptr<Launcher>(new LocalLauncher(runner));
  return Errorf(ErrorCode::kInvalidArgument, "unknown launcher '{}' (known: local)", name);
}

std::string DescribeRankEnd(const RankOutcome& rank, int first_failure) {
  if (rank.result.success()) return "succeeded";
  if (rank.result.stopped) {
    std::string how = rank.result.term_signal
                          ? "killed by " + SignalName(rank.result.term_signal)
                          : fmt::format("exited with status {}", rank.result.exit_code);
    return fmt::format("was stopped after rank {} failed: {}", first_failure, how);
  }
  return HowItEnded(rank.result);
}

std::string DescribeFailure(const LaunchResult& result, Filesystem& fs, int tail_lines) {
  if (result.success() || result.first_failure >= static_cast<int>(result.ranks.size()))
    return "every rank succeeded";
  const RankOutcome& failed = result.ranks[static_cast<size_t>(result.first_failure)];
  std::vector<int> stopped;
  for (const RankOutcome& r : result.ranks)
    if (r.result.stopped) stopped.push_back(r.rank);
  std::string text =
      fmt::format("rank {} of {} {}", failed.rank, result.ranks.size(), HowItEnded(failed.result));
  if (!stopped.empty())
    text += fmt::format("; {} {} {} stopped", stopped.size() == 1 ? "rank" : "ranks",
                        fmt::join(stopped, ", "), stopped.size() == 1 ? "was" : "were");
  Result<std::string> log = fs.ReadFile(failed.log_path);
  if (!log.ok()) {
    text += fmt::format("\n(rank {}'s log {} cannot be read: {})", failed.rank, failed.log_path,
                        log.status().message());
  } else if (log->empty()) {
    text += fmt::format("\n(rank {}'s log {} is empty)", failed.rank, failed.log_path);
  } else {
    text += fmt::format("\nlast lines of rank {}'s log ({}):\n{}", failed.rank, failed.log_path,
                        LastLines(*log, tail_lines));
    if (text.back() == '\n') text.pop_back();
  }
  return text;
}

}  // namespace bm::launch
