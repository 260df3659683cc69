#include "engine/slurm.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace bm::engine {
namespace {

// slurmstepd's "*** JOB 12 ON n1 CANCELLED AT 2026-01-01T10:00:00 DUE TO TIME LIMIT ***".
const std::regex& CancelledLine() {
  static const std::regex re(
      R"(\*\*\* (JOB|STEP) ([0-9.]+) ON \S+ CANCELLED AT \S+(?: DUE TO ([A-Z ]+?))? \*\*\*)");
  return re;
}

// "DUE TO <why>" as the JobState Slurm records for it.
std::string StateOfCancel(const std::string& due_to) {
  if (due_to.empty()) return "CANCELLED";
  if (due_to == "TIME LIMIT") return "TIMEOUT";
  if (due_to == "PREEMPTION") return "PREEMPTED";
  if (due_to == "NODE FAILURE") return "NODE_FAIL";
  return "CANCELLED";
}

}  // namespace

Result<SrunShape> RankShape(int world, int ranks_per_node, bool gpu, int cpus_per_task) {
  if (world < 1 || ranks_per_node < 1)
    return Errorf(ErrorCode::kInvalidArgument, "{} ranks at {} per node: both must be >= 1", world,
                  ranks_per_node);
  SrunShape s;
  s.tasks = world;
  if (world <= ranks_per_node) {
    s.tasks_per_node = world;
  } else if (world % ranks_per_node != 0) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} ranks do not fill whole nodes of {} ranks ([benchmake.slurm] "
                  "ranks_per_node): choose a layout of a multiple of {} ranks, or another "
                  "ranks_per_node",
                  world, ranks_per_node, ranks_per_node);
  } else {
    s.nodes = world / ranks_per_node;
    s.tasks_per_node = ranks_per_node;
  }
  if (gpu) {
    s.gpus_per_task = 1;
    s.gpus_shared_on_node = true;
  }
  s.cpus_per_task = cpus_per_task;
  return s;
}

bool InSlurmAllocation() {
  const char* id = std::getenv("SLURM_JOB_ID");
  return id != nullptr && *id != '\0';
}

std::string NewSlurmJobName(std::string_view what) {
  std::random_device rd;
  return fmt::format("bm.{}.{:08x}", what, rd());
}

Command SrunCommand(const SlurmOptions& o, const std::string& job_name, const SrunShape& s,
                    Command inner) {
  std::vector<std::string> argv = {"srun", "--job-name=" + job_name,
                                   fmt::format("--nodes={}", s.nodes),
                                   fmt::format("--ntasks={}", s.tasks)};
  if (s.tasks_per_node > 0) argv.push_back(fmt::format("--ntasks-per-node={}", s.tasks_per_node));
  if (s.gpus_per_task > 0) {
    argv.push_back(fmt::format("--gpus-per-task={}", s.gpus_per_task));
    if (s.gpus_shared_on_node) argv.push_back("--gpu-bind=none");
  }
  if (s.cpus_per_task > 0) argv.push_back(fmt::format("--cpus-per-task={}", s.cpus_per_task));
  if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
  if (!o.account.empty()) argv.push_back("--account=" + o.account);
  if (!o.time.empty()) argv.push_back("--time=" + o.time);
  // The tasks get our environment (the step's variables included), never our
  // stdin; one Ctrl-C ends the job, and so does the first task to fail.
  for (const char* flag :
       {"--export=ALL", "--input=none", "--quit-on-interrupt", "--kill-on-bad-exit=1"})
    argv.push_back(flag);
  argv.insert(argv.end(), o.srun_args.begin(), o.srun_args.end());
  argv.insert(argv.end(), inner.argv.begin(), inner.argv.end());
  inner.argv = std::move(argv);
  if (!InSlurmAllocation()) inner.on_interrupt = {"scancel", "--name=" + job_name};
  return inner;
}

bool SlurmEnd::ended_by_slurm() const {
  if (refused) return true;
  for (const char* s :
       {"TIMEOUT", "CANCELLED", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"})
    if (state == s) return true;
  return false;
}

bool SlurmEnd::final() const {
  return refused || state == "COMPLETED" || state == "FAILED" || ended_by_slurm();
}

bool SlurmEnd::retryable() const {
  return state == "PREEMPTED" || state == "NODE_FAIL" || state == "BOOT_FAIL";
}

std::string SlurmEnd::Describe() const {
  if (refused) return "Slurm refused the job: " + reason;
  if (state.empty()) return "";
  std::string what =
      id.empty() ? "job" : (id.find('.') == std::string::npos ? "job " : "step ") + id;
  return fmt::format("Slurm {} ended {}{}", what, state, reason.empty() ? "" : " (" + reason + ")");
}

SlurmEnd ParseSrunOutput(std::string_view log) {
  static const std::regex refused(
      R"(srun: error: Unable to (?:allocate resources|create step for job \d+): (.*))");
  static const std::regex revoked(R"(srun: Job allocation (\d+) has been revoked)");
  static const std::regex oom(R"(srun: error: \S+: tasks? [0-9,-]+: Out Of Memory)");
  static const std::regex node_failure(R"(srun: error: Node failure on (\S+))");
  SlurmEnd end;
  std::istringstream in{std::string(log)};
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.find("***") == std::string::npos && line.find("srun:") == std::string::npos) continue;
    if (std::regex_search(line, m, CancelledLine())) {
      end = SlurmEnd{m[2], StateOfCancel(m[3]), m[3].matched ? m[3].str() : "", false};
    } else if (std::regex_search(line, m, refused)) {
      end = SlurmEnd{"", "", m[1], true};
    } else if (std::regex_search(line, m, revoked)) {
      end = SlurmEnd{m[1], "CANCELLED", "revoked before it started", false};
    } else if (std::regex_search(line, m, oom)) {
      end.state = "OUT_OF_MEMORY";
    } else if (std::regex_search(line, m, node_failure)) {
      end.state = "NODE_FAIL";
      end.reason = "node " + m[1].str();
    }
  }
  return end;
}

namespace {

std::optional<SlurmEnd> QueryOnce(CommandRunner& runner, Filesystem& fs,
                                  const std::string& job_name, const std::string& scratch) {
  const std::string out = scratch + "/squeue.txt";
  (void)fs.Remove(out);
  Command cmd;
  cmd.argv = {"squeue", "--noheader", "--states=all", "--name=" + job_name, "--format=%i|%T|%r"};
  cmd.log_path = out;
  cmd.timeout_seconds = 60;
  Result<CommandResult> r = runner.Run(cmd);
  if (!r.ok() || !r->success()) return std::nullopt;
  Result<std::string> text = fs.ReadFile(out);
  if (!text.ok()) return std::nullopt;
  std::optional<SlurmEnd> newest;
  long newest_id = -1;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find('|'), b = line.rfind('|');
    if (a == std::string::npos || a == b) continue;  // squeue's own messages
    std::string id = line.substr(0, a);
    char* end = nullptr;
    long n = std::strtol(id.c_str(), &end, 10);
    if (end == id.c_str() || n <= newest_id) continue;
    newest_id = n;
    std::string reason = line.substr(b + 1);
    if (reason == "None") reason.clear();
    newest = SlurmEnd{id, line.substr(a + 1, b - a - 1), reason, false};
  }
  return newest;
}

}  // namespace

std::optional<SlurmEnd> QuerySlurmJob(CommandRunner& runner, Filesystem& fs,
                                      const std::string& job_name, const std::string& scratch,
                                      double settle_s) {
  if (!fs.MakeDirs(scratch).ok()) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(settle_s * 1000));
  for (;;) {
    std::optional<SlurmEnd> end = QueryOnce(runner, fs, job_name, scratch);
    if (!end || end->final() || std::chrono::steady_clock::now() >= deadline) return end;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace bm::engine
