// Launcher: how the ranks of a multi-process training step are started. A
// step whose layout has N = TP*PP*DP > 1 ranks runs N benchmake-train
// processes, like torchrun; where they run is the launcher's business — local
// processes on the step's GPUs (local_launcher.h, the default), the tasks of
// one srun under the Slurm executor (slurm_launcher.h), or mpirun with a
// hostfile (mpirun_launcher.h); one file each, plus a line in MakeLauncher.
// Every launcher hands every rank the same facts (trainer/dist/rank_env.h:
// rank, world size, local rank and local world size — as RANK, ... or as
// Slurm's and OpenMPI's own variables —, BENCHMAKE_RENDEZVOUS,
// BENCHMAKE_COLLECTIVE_TIMEOUT; the device is GPU LOCAL_RANK of
// CUDA_VISIBLE_DEVICES) and keeps the step's semantics: all ranks succeed, or
// the first failure (exit status, signal, timeout) stops the others within a
// bounded time and the step fails naming that rank.
//
// Which rank failed first: a rank that dies takes its peers down within
// milliseconds (their collectives break), so the order in which the launcher
// sees the ends says little. A rank that only lost a peer says so by exiting
// with trainer/dist/exit_status.h's kExitPeerLost (LostAPeer), and every
// launcher names, of the ranks that failed, one that did not: a rank killed by
// a signal or failing by itself. Within each kind, the first the launcher saw
// (torchrun's "first observed failure"). A rank that only lost a peer is named
// when no other rank is known to have failed.
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
#include "engine/placement.h"

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
  bool gpu = false;                   // each rank drives a GPU (device "cuda")
  // The step's GPUs leased on this machine (CUDA_VISIBLE_DEVICES of every
  // local rank; rank r drives entry LOCAL_RANK). Empty for CPU ranks, and for
  // launchers whose ranks get GPUs elsewhere (Slurm, mpirun's hosts).
  std::vector<int> gpus;
  int cpus_per_rank = 0;  // CPU threads each rank uses (`threads`); 0: unsaid
  double grace_s = 5;     // after a failure: SIGTERM to the others, SIGKILL this much later
};

std::string RankLogPath(const LaunchSpec& spec, int rank);

struct RankOutcome {
  int rank = 0;
  CommandResult result;  // result.stopped: ended because another rank failed first
  std::string log_path;
  // Set when the launcher does not report how this rank ended (mpirun names
  // only the first rank to fail); `result` then says nothing.
  std::string unreported;
};

// A rank that stopped answering: its heartbeat (trainer/dist/heartbeat.h)
// ended `silent_s` seconds before the last heartbeat of any rank.
struct UnresponsiveRank {
  int rank = 0;
  double silent_s = 0;
};

struct LaunchResult {
  // The one command that ran every rank (srun, mpirun), for the step log;
  // empty when each rank was a process of its own.
  std::vector<std::string> command;
  std::vector<RankOutcome> ranks;  // by rank
  int first_failure = -1;          // the rank whose failure ended the run; -1: all succeeded
  // The one command (srun, mpirun) failed naming no rank: its own failure (it
  // refused the job, or could not start the ranks). first_failure is then 0
  // and ranks[0].result says how the command ended; no rank's end is known.
  bool command_failed = false;
  std::vector<UnresponsiveRank> unresponsive;  // FindUnresponsiveRanks, after a failure

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

// The launcher `placement.launcher` names ("local", "slurm", "mpirun"), with
// the placement's settings, starting processes through `runner` and reading
// logs through `fs` (both must outlive it). kInvalidArgument naming the known
// launchers.
Result<std::unique_ptr<Launcher>> MakeLauncher(const engine::Placement& placement,
                                               CommandRunner& runner, Filesystem& fs);

// Whether `r` is the end of a rank that failed only because another rank was
// lost: it exited by itself with kExitPeerLost (trainer/dist/exit_status.h).
bool LostAPeer(const CommandResult& r);

// The launchers whose ranks are the tasks of one command (srun, mpirun):
// `argv` run by a shell that sends the output of any rank but 0 (the rank in
// variable `rank_var`) to RankLogPath(spec, rank); rank 0's stays the
// command's, which goes to the step log.
std::vector<std::string> RankLogWrapper(const LaunchSpec& spec, std::string_view rank_var);

// The environment of every rank of such a launcher: spec.env, the rendezvous
// and the collective timeout, and RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE emptied, so that the ranks read the launcher's own
// variables (rank_env.h) whatever benchmake inherited.
std::map<std::string, std::string> SharedRankEnv(const LaunchSpec& spec);

// Runs `cmd`, the one command that runs every rank (srun, mpirun), and makes
// its end the ranks': all succeeded when it did; otherwise `parse` reads what
// the command added to the step log (spec.log_path) into (rank, how it ended)
// pairs, in the order the command saw them. The first of them that did not
// only lose a peer (LostAPeer) failed first — else the first of them —; the
// others named were stopped, except those that lost a peer, which ended by
// themselves; those not named succeeded — or, when `unnamed` is not empty (a
// launcher that names only the first failure), ended in a way it did not
// report, RankOutcome::unreported = `unnamed` — and rank 0 failed first when
// none is named (the launcher's own failure; the step log says why).
// LaunchResult::command is `cmd.argv`.
using RankEndParser = std::vector<std::pair<int, CommandResult>> (*)(std::string_view log);
Result<LaunchResult> RunRanksAsOneCommand(CommandRunner& runner, Filesystem& fs,
                                          const LaunchSpec& spec, const Command& cmd,
                                          RankEndParser parse, std::string_view unnamed = "");

// The ranks of a failed run whose heartbeats (RENDEZVOUS/heartbeat/rank-K)
// stopped more than kUnresponsiveAfterS before the newest one: frozen ranks
// (SIGSTOP, a lost machine) that the others waited for until their collective
// timed out. Ranks without a heartbeat file (not started, or a launcher whose
// rendezvous this machine cannot see) are not judged.
inline constexpr double kUnresponsiveAfterS = 4.0;
std::vector<UnresponsiveRank> FindUnresponsiveRanks(Filesystem& fs, const LaunchSpec& spec);

// How a rank ended, for people: "exited with status 1", "was killed by signal
// 9 (SIGKILL)", "timed out (...)", "was stopped after rank 2 failed: killed by
// signal 15 (SIGTERM)", "lost a peer after rank 2 failed (exited with status
// 75)", or RankOutcome::unreported.
std::string DescribeRankEnd(const RankOutcome& rank, int first_failure);

// The failed run in words: the ranks that stopped answering (they caused
// it), which rank failed first and how, the last `tail_lines` lines of that
// rank's log, which ranks lost a peer and which were stopped; for a
// command_failed run, how the command ended and twice as many lines of the
// step log (mpirun's and srun's refusals are long and say why at the top).
// Reads the log through `fs`; an unreadable log is said to be so.
std::string DescribeFailure(const LaunchResult& result, Filesystem& fs, int tail_lines = 20);

}  // namespace bm::launch
