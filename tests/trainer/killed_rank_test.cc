// A rank killed from outside: kill -9 of one rank of a real multi-rank CPU run
// (benchmake-train processes, Gloo between them) while the ranks train. Its
// peers lose it within milliseconds and exit by themselves; the step's failure
// must name the killed rank, never a peer (rules/launch/launcher.h) — under
// the local launcher, under srun on a real Slurm started on loopback
// (tests/support/slurm_cluster.h), whose report lists the tasks in the order
// their ends reached it, and under OpenMPI's mpirun. The peers exit with the
// trainer's "peer lost" status (trainer/dist/exit_status.h), which every
// launcher ranks below a rank that failed by itself.
//
// Two ranks, killing rank 1 and rank 0 in turn: ten runs under the local
// launcher and under srun, six under mpirun; and four ranks under srun, each
// killed once. Before the peer had a status of its own, srun (Slurm 22.05)
// listed task 0's end first in every run that killed rank 1 ("task 0: Exited
// with exit code 1", then "task 1: Killed"), and the step named rank 0: 5 runs
// of 10 failed. mpirun (OpenMPI 4.1.4) named the killed rank already.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/launch/local_launcher.h"
#include "rules/launch/mpirun_launcher.h"
#include "rules/launch/slurm_launcher.h"
#include "tests/support/slurm_cluster.h"
#include "tests/trainer/train_ranks.h"
#include "trainer/dist/exit_status.h"
#include "trainer/dist/heartbeat.h"

namespace bm::train::testing {
namespace {

constexpr int kRuns = 10;

pid_t PidOfRank(const std::string& rendezvous, int rank) {
  std::ifstream in(dist::HeartbeatPath(rendezvous, rank));
  pid_t pid = 0;
  in >> pid;
  return pid;
}

class KilledRankTest : public TrainRanksTest {
 protected:
  // One run of `world` data-parallel ranks through `launcher`, rank `victim`
  // killed with SIGKILL a second after every rank beat (they are training by
  // then). "" when the failure names the victim and every other rank lost it
  // or was stopped; else what went wrong.
  std::string RunAndKill(launch::Launcher& launcher, int run, int victim, int world = 2) {
    const std::string name = "killed" + std::to_string(run);
    nlohmann::json config = Config(name, "llama-tiny", "TP1PP1DP" + std::to_string(world), 2, 1, 2);
    config["steps"] = 100000;  // still training when it is killed
    const std::string path = dir_ + "/" + name + ".json", rdv = dir_ + "/" + name + ".rdv";
    std::ofstream(path) << config.dump();
    std::filesystem::create_directories(rdv);

    launch::LaunchSpec spec;
    spec.argv = {TrainerPath(), "--config", path};
    spec.cwd = dir_;
    spec.env = {{"OMP_WAIT_POLICY", "passive"}};
    spec.world_size = world;
    spec.rendezvous = rdv;
    spec.collective_timeout_s = 60;
    spec.log_path = dir_ + "/" + name + ".log";
    spec.cpus_per_rank = 1;
    spec.grace_s = 1;
    std::ofstream(spec.log_path).flush();  // the step log exists before the run (train_common.cc)

    bool killed = false;
    std::thread killer([&] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      auto all_beat = [&] {
        for (int rank = 0; rank < world; ++rank)
          if (PidOfRank(rdv, rank) == 0) return false;
        return true;
      };
      while (!all_beat() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (const pid_t pid = PidOfRank(rdv, victim); pid > 0) killed = kill(pid, SIGKILL) == 0;
    });
    Result<launch::LaunchResult> r = launcher.Launch(spec);
    killer.join();
    if (!r.ok()) return "the launch failed: " + r.status().message();
    if (!killed) return "the victim was never seen training";
    RealFilesystem fs;
    const std::string why = launch::DescribeFailure(*r, fs);
    std::string ends;
    for (const launch::RankOutcome& o : r->ranks)
      if (o.rank != victim)
        ends += fmt::format("; rank {} {}", o.rank, launch::DescribeRankEnd(o, r->first_failure));
    std::printf("run %d, rank %d killed%s\n", run, victim, ends.c_str());
    if (r->first_failure != victim)
      return fmt::format("named rank {}, not the killed rank {}: {}\n({})", r->first_failure,
                         victim, why, ends);
    const std::string expected =
        fmt::format("rank {} of {} was killed by signal 9 (SIGKILL)", victim, world);
    if (why.rfind(expected, 0) != 0) return "the failure does not start '" + expected + "': " + why;
    // Every other rank ended by itself on losing a peer (exit status 75), or
    // was ended by the launcher first; none failed in a way of its own.
    // (mpirun reports only the first rank to fail: the others' ends are unknown.)
    for (const launch::RankOutcome& o : r->ranks) {
      const CommandResult& p = o.result;
      if (o.rank != victim && !p.stopped && o.unreported.empty() &&
          !(p.term_signal == 0 && p.exit_code == dist::kExitPeerLost))
        return fmt::format("rank {} {}, neither stopped nor lost a peer", o.rank,
                           launch::DescribeRankEnd(o, r->first_failure));
    }
    return "";
  }
};

TEST_F(KilledRankTest, UnderTheLocalLauncherTheKilledRankIsNamed) {
  SubprocessRunner runner;
  launch::LocalLauncher launcher(runner);
  for (int run = 0; run < kRuns; ++run) EXPECT_EQ(RunAndKill(launcher, run, 1 - run % 2), "");
}

TEST_F(KilledRankTest, UnderSrunTheKilledRankIsNamed) {
  Result<std::unique_ptr<bm::testing::SlurmCluster>> cluster = bm::testing::SlurmCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << "Slurm cannot run here: " << cluster.status().message();
  (*cluster)->ExportEnv();
  ::unsetenv("SLURM_JOB_ID");  // a job of its own
  SubprocessRunner runner;
  RealFilesystem fs;
  engine::SlurmOptions options;
  options.time = "5";
  launch::SlurmLauncher launcher(runner, fs, options, "bm.killed.0123abcd");
  for (int run = 0; run < kRuns; ++run)
    EXPECT_EQ(RunAndKill(launcher, run, 1 - run % 2), "") << (*cluster)->Logs();
}

// mpirun reports the rank killed by a signal (OpenMPI 4.1: "exited on signal 9"),
// whichever ended first; it names only that one.
TEST_F(KilledRankTest, UnderMpirunTheKilledRankIsNamed) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun is not installed (scripts/bootstrap.sh test installs openmpi-bin)";
  SubprocessRunner runner;
  RealFilesystem fs;
  launch::MpirunLauncher launcher(runner, fs, {});
  for (int run = 0; run < 6; ++run) EXPECT_EQ(RunAndKill(launcher, run, 1 - run % 2), "");
}

// Four tasks, each rank killed once, highest first: the three others lose it
// (or each other) and srun may list them all before it, in one line.
TEST_F(KilledRankTest, UnderSrunAKilledRankOfFourIsNamed) {
  Result<std::unique_ptr<bm::testing::SlurmCluster>> cluster = bm::testing::SlurmCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << "Slurm cannot run here: " << cluster.status().message();
  (*cluster)->ExportEnv();
  ::unsetenv("SLURM_JOB_ID");
  SubprocessRunner runner;
  RealFilesystem fs;
  engine::SlurmOptions options;
  options.time = "5";
  launch::SlurmLauncher launcher(runner, fs, options, "bm.killed4.0123abcd");
  for (int victim = 3; victim >= 0; --victim)
    EXPECT_EQ(RunAndKill(launcher, 3 - victim, victim, 4), "") << (*cluster)->Logs();
}

}  // namespace
}  // namespace bm::train::testing
