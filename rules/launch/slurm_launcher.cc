#include "rules/launch/slurm_launcher.h"

#include <signal.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "engine/slurm.h"
#include "trainer/dist/rank_env.h"

namespace bm::launch {
namespace {

// "0", "0-1", "0,2-3" → the ranks.
std::vector<int> TaskList(const std::string& list) {
  std::vector<int> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    size_t dash = item.find('-');
    int a = std::stoi(item.substr(0, dash));
    int b = dash == std::string::npos ? a : std::stoi(item.substr(dash + 1));
    for (int t = a; t <= b; ++t) out.push_back(t);
  }
  return out;
}

CommandResult HowTaskEnded(const std::string& how) {
  static const std::regex exited(R"(Exited with exit code (\d+))");
  static const std::pair<const char*, int> kSignals[] = {
      {"Killed", SIGKILL},       {"Terminated", SIGTERM}, {"Segmentation fault", SIGSEGV},
      {"Aborted", SIGABRT},      {"Interrupt", SIGINT},   {"Bus error", SIGBUS},
      {"Out Of Memory", SIGKILL}};
  CommandResult r;
  std::smatch m;
  if (std::regex_search(how, m, exited)) {
    r.exit_code = std::stoi(m[1]);
    return r;
  }
  for (const auto& [name, sig] : kSignals)
    if (how.rfind(name, 0) == 0) {
      r.term_signal = sig;
      return r;
    }
  r.exit_code = 1;
  return r;
}

}  // namespace

std::vector<std::pair<int, CommandResult>> ParseSrunTaskEnds(std::string_view log) {
  static const std::regex line_re(R"(srun: error: \S+: tasks? ([0-9,-]+): (.+))");
  std::vector<std::pair<int, CommandResult>> out;
  std::istringstream in{std::string(log)};
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.find("srun: error:") == std::string::npos || !std::regex_search(line, m, line_re))
      continue;
    CommandResult how = HowTaskEnded(m[2]);
    for (int task : TaskList(m[1])) out.emplace_back(task, how);
  }
  return out;
}

int SlurmLauncher::LocalWorldSize(int world_size) const {
  return std::min(world_size, options_.ranks_per_node);
}

Result<LaunchResult> SlurmLauncher::Launch(const LaunchSpec& spec) {
  BM_ASSIGN_OR_RETURN(
      engine::SrunShape shape,
      engine::RankShape(spec.world_size, options_.ranks_per_node, spec.gpu, spec.cpus_per_rank));
  Command cmd;
  cmd.argv = RankLogWrapper(spec, "SLURM_PROCID");
  cmd.cwd = spec.cwd;
  cmd.env = SharedRankEnv(spec);
  // Read before Slurm's: emptied, in case mpirun started benchmake.
  for (const char* v : train::dist::kOpenMpiRankVars) cmd.env[v] = "";
  cmd.log_path = spec.log_path;
  cmd.echo_to_terminal = spec.echo_rank0;
  cmd = engine::SrunCommand(options_, job_name_, shape, std::move(cmd));
  return RunRanksAsOneCommand(runner_, fs_, spec, cmd, &ParseSrunTaskEnds);
}

}  // namespace bm::launch
