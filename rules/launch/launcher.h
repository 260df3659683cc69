// Launcher: how the ranks of a multi-process training step are started. A
// step whose layout has N = TP*PP*DP > 1 ranks runs N benchmake-train
// processes, like torchrun; where they run is the launcher's business — local
// processes on the step's GPUs (local_launcher.h, the default), and later srun
// inside a Slurm allocation or mpirun with a hostfile (one new file each, plus
// a line in MakeLauncher). Every launcher hands every rank the same facts
// (trainer/dist/rank_env.h: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// BENCHMAKE_RENDEZVOUS, BENCHMAKE_COLLECTIVE_TIMEOUT; the device is GPU
// LOCAL_RANK of CUDA_VISIBLE_DEVICES) and keeps the step's semantics: all
// ranks succeed, or the first failure (exit status, signal, timeout) stops the
// others within a bounded time and the step fails naming that rank.
//
// Logs: rank 0 writes the step log (LaunchSpec::log_path, echoed to the
// terminal when asked), rank k > 0 writes RankLogPath(spec, k).
//
// Thread safety: a Launcher may be used by one step at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/command_runner.h"
#include "base/filesystem.h"
#include "base/result.h"

namespace bm::launch {

// What to start: one command, run once per rank.
struct LaunchSpec {
  std::vector<std::string> argv;           // the same for every rank
  std::string cwd;                         // every rank's working directory
  std::map<std::string, std::string> env;  // for every rank, before the rank variables
  int world_size = 1;
  std::string rendezvous;             // a directory every rank can write (BENCHMAKE_RENDEZVOUS)
  double collective_timeout_s = 300;  // BENCHMAKE_COLLECTIVE_TIMEOUT
  std::string log_path;               // rank 0's output: the step log
  bool echo_rank0 = false;            // also copy rank 0's output to the terminal
  // The step's GPUs (CUDA_VISIBLE_DEVICES of every rank; rank r drives entry
  // LOCAL_RANK). Empty: CPU ranks.
  std::vector<int> gpus;
  double grace_s = 5;  // after a failure: SIGTERM to the others, SIGKILL this much later
};

std::string RankLogPath(const LaunchSpec& spec, int rank);

struct RankOutcome {
  int rank = 0;
  CommandResult result;  // result.stopped: ended because another rank failed first
  std::string log_path;
};

struct LaunchResult {
  std::vector<RankOutcome> ranks;  // by rank
  int first_failure = -1;          // the rank whose failure ended the run; -1: all succeeded

  bool success() const { return first_failure < 0; }
};

class Launcher {
 public:
  virtual ~Launcher() = default;

  virtual std::string_view name() const = 0;

  // Ranks that share one machine in a world of `world_size` (LOCAL_WORLD_SIZE;
  // the rules divide a machine's cores by it).
  virtual int LocalWorldSize(int world_size) const = 0;

  // Runs every rank to its end. kInvalidArgument for a spec the launcher
  // cannot place (GPUs that do not match the ranks); a Status error when the
  // ranks could not be started; a run in which a rank failed is an OK
  // LaunchResult with !success().
  virtual Result<LaunchResult> Launch(const LaunchSpec& spec) = 0;
};

// The launcher called `name` ("local"), starting processes through `runner`
// (which must outlive it). kInvalidArgument naming the known launchers.
Result<std::unique_ptr<Launcher>> MakeLauncher(std::string_view name, CommandRunner& runner);

// How a rank ended, for people: "exited with status 1", "was killed by signal
// 9 (SIGKILL)", "timed out (...)", "was stopped after rank 2 failed: killed by
// signal 15 (SIGTERM)".
std::string DescribeRankEnd(const RankOutcome& rank, int first_failure);

// The failed run in words: which rank failed first and how, the last
// `tail_lines` lines of that rank's log, and which ranks were stopped. Reads
// the log through `fs`; an unreadable log is said to be so.
std::string DescribeFailure(const LaunchResult& result, Filesystem& fs, int tail_lines = 20);

}  // namespace bm::launch
