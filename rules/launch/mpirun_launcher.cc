#include "rules/launch/mpirun_launcher.h"

#include <fmt/format.h>
#include <unistd.h>

#include <regex>

namespace bm::launch {

std::vector<std::pair<int, CommandResult>> ParseMpirunReport(std::string_view log) {
  static const std::regex exited(R"(Process name: \[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(\d+))");
  static const std::regex signaled(
      R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  const std::string text(log);
  std::smatch m;
  CommandResult how;
  if (std::regex_search(text, m, exited)) {
    how.exit_code = std::stoi(m[2]);
    return {{std::stoi(m[1]), how}};
  }
  if (std::regex_search(text, m, signaled)) {
    how.term_signal = std::stoi(m[2]);
    return {{std::stoi(m[1]), how}};
  }
  return {};
}

Result<LaunchResult> MpirunLauncher::Launch(const LaunchSpec& spec) {
  if (spec.world_size < 1)
    return Errorf(ErrorCode::kInvalidArgument, "a launch needs at least one rank, not {}",
                  spec.world_size);
  Command cmd;
  cmd.argv = {"mpirun", "-np", std::to_string(spec.world_size)};
  if (!options_.hostfile.empty())
    cmd.argv.insert(cmd.argv.end(), {"--hostfile", options_.hostfile});
  cmd.argv.insert(cmd.argv.end(), {"--bind-to", "none"});
  if (::geteuid() == 0) cmd.argv.push_back("--allow-run-as-root");
  cmd.env = SharedRankEnv(spec);
  for (const auto& [name, value] : cmd.env) cmd.argv.insert(cmd.argv.end(), {"-x", name});
  cmd.argv.insert(cmd.argv.end(), options_.mpirun_args.begin(), options_.mpirun_args.end());
  for (std::string& a : RankLogWrapper(spec, "OMPI_COMM_WORLD_RANK"))
    cmd.argv.push_back(std::move(a));
  cmd.cwd = spec.cwd;
  cmd.log_path = spec.log_path;
  cmd.echo_to_terminal = spec.echo_rank0;
  return RunRanksAsOneCommand(runner_, fs_, spec, cmd, &ParseMpirunReport,
                              "ended with the job (mpirun reports only the first rank to fail)");
}

}  // namespace bm::launch
