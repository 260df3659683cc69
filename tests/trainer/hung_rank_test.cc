// A rank that hangs: one rank of a real two-rank CPU run (benchmake-train
// processes, Gloo between them) is stopped with SIGSTOP while the ranks train;
// the other waits in its collective until the timeout and exits with status 1,
// which ends the run. The failure must name the stopped rank as the one that
// hung, not only the rank that gave up waiting (rules/launch/launcher.h).
#include <signal.h>

#include <fstream>
#include <thread>

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/launch/local_launcher.h"
#include "tests/trainer/train_ranks.h"
#include "trainer/dist/heartbeat.h"

namespace bm::train::testing {
namespace {

using HungRankTest = TrainRanksTest;

pid_t PidOfRank(const std::string& rendezvous, int rank) {
  std::ifstream in(dist::HeartbeatPath(rendezvous, rank));
  pid_t pid = 0;
  in >> pid;
  return pid;
}

TEST_F(HungRankTest, TheStoppedRankIsNamed) {
  nlohmann::json config = Config("hung", "llama-tiny", "TP1PP1DP2", 2, 1, 2);
  config["steps"] = 100000;  // still training when it is stopped
  const std::string path = dir_ + "/hung.json", rdv = dir_ + "/hung.rdv";
  std::ofstream(path) << config.dump();
  std::filesystem::create_directories(rdv);

  SubprocessRunner runner;
  RealFilesystem fs;
  launch::LocalLauncher launcher(runner);
  launch::LaunchSpec spec;
  spec.argv = {TrainerPath(), "--config", path};
  spec.env = {{"OMP_WAIT_POLICY", "passive"}};
  spec.world_size = 2;
  spec.rendezvous = rdv;
  spec.collective_timeout_s = 12;
  spec.log_path = dir_ + "/hung.log";
  spec.grace_s = 1;

  // Stops rank 1 two seconds after both ranks beat: they are training by then.
  std::thread stopper([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((PidOfRank(rdv, 0) == 0 || PidOfRank(rdv, 1) == 0) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    if (PidOfRank(rdv, 1) > 0) kill(PidOfRank(rdv, 1), SIGSTOP);
  });
  Result<launch::LaunchResult> r = launcher.Launch(spec);
  stopper.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->success());
  r->unresponsive = launch::FindUnresponsiveRanks(fs, spec);
  const std::string why = launch::DescribeFailure(*r, fs);
  ASSERT_EQ(r->unresponsive.size(), 1u) << why;
  EXPECT_EQ(r->unresponsive[0].rank, 1) << why;
  EXPECT_NE(why.find("rank 1 of 2 stopped answering (hung"), std::string::npos) << why;
  EXPECT_NE(why.find("then rank 0 of 2 exited with status 1"), std::string::npos) << why;
}

}  // namespace
}  // namespace bm::train::testing
