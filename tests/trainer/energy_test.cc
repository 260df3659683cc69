// The energy block of metrics.json: the ranks' readings combined over distinct devices (ranks
// sharing a GPU count it once), gathered over real processes (Gloo), and written per token of
// the steps this process ran. The readings themselves come from NVML on a GPU
// (cuda_backend_test, cuda_ranks_test); here they are given.
#include "trainer/run/energy.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/trainer/multi_rank.h"
#include "trainer/run/metrics.h"
#include "trainer/run/run_ranks.h"

namespace bm::train {
namespace {

using dist::testing::AllRanksPassed;
using dist::testing::EnvOf;
using dist::testing::RankResult;
using dist::testing::TempDir;

TEST(EnergyTest, RanksSharingADeviceCountItOnce) {
  const std::vector<std::optional<RankEnergy>> ranks = {
      RankEnergy{"gpu-a", 100, 2.0}, RankEnergy{"gpu-a", 100, 2.5}, RankEnergy{"gpu-b", 40, 1.0}};
  std::optional<RunEnergy> e = CombineEnergy(ranks);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->joules, 140);
  EXPECT_EQ(e->devices, 2);
  EXPECT_EQ(e->seconds, 2.5);  // the longest window
}

TEST(EnergyTest, OneRankWithoutAReadingLeavesNoTotal) {
  const std::vector<std::optional<RankEnergy>> ranks = {RankEnergy{"gpu-a", 100, 2.0},
                                                        std::nullopt};
  EXPECT_FALSE(CombineEnergy(ranks));
  EXPECT_FALSE(CombineEnergy(std::vector<std::optional<RankEnergy>>{}));
}

RunConfig CpuRun(int dp) {
  RunConfig run;
  run.layout = {1, 1, dp};
  return run;
}

// Stretches added up, what lies between them left out; a failed reading spoils the total.
TEST(EnergyTest, MeterAddsItsStretches) {
  double counter = 1000;
  bool readable = true;
  EnergyMeter meter([&]() -> std::optional<EnergyReading> {
    if (!readable) return std::nullopt;
    return EnergyReading{"gpu-a", counter};
  });
  EXPECT_FALSE(meter.Total());  // nothing measured yet
  meter.Stop();                 // none running: no-op
  meter.Start();
  counter += 100;  // the steps
  meter.Stop();
  counter += 5000;  // a checkpoint, not measured
  meter.Start();
  meter.Start();  // already running: no-op
  counter += 50;
  meter.Stop();
  std::optional<RankEnergy> total = meter.Total();
  ASSERT_TRUE(total);
  EXPECT_EQ(total->device, "gpu-a");
  EXPECT_EQ(total->joules, 150);
  EXPECT_GT(total->seconds, 0);
  readable = false;
  meter.Start();
  EXPECT_FALSE(meter.Total());
}

TEST(EnergyTest, AWorldOfOne) {
  Result<RunRanks> ranks = RunRanks::Connect(CpuRun(1), EnvOf(0, 1, "", 5));
  ASSERT_TRUE(ranks.ok()) << ranks.status().message();
  Result<std::optional<RunEnergy>> e = GatherEnergy(*ranks, RankEnergy{"gpu-a", 250.5, 0.5});
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_TRUE(*e);
  EXPECT_EQ((*e)->joules, 250.5);
  EXPECT_EQ((*e)->devices, 1);
  EXPECT_EQ((*e)->seconds, 0.5);
  Result<std::optional<RunEnergy>> none = GatherEnergy(*ranks, std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

// Four processes: ranks 0 and 1 share "gpu-a", ranks 2 and 3 have a GPU each; every rank gets
// the same total. Then rank 3 reads nothing, and no rank reports a total.
TEST(EnergyTest, GatheredOverRanks) {
  TempDir dir;
  auto outcomes = dist::testing::RunRanks(4, 60, [&](int rank) -> RankResult {
    Result<RunRanks> ranks = RunRanks::Connect(CpuRun(4), EnvOf(rank, 4, dir.path(), 30));
    RANK_OK(ranks.status());
    const std::string device = rank < 2 ? "gpu-a" : fmt::format("gpu-{}", rank);
    const double used = 10.0 * (rank + 1);  // what this rank's counter moved
    Result<std::optional<RunEnergy>> e = GatherEnergy(*ranks, RankEnergy{device, used, 1.0 + rank});
    RANK_OK(e.status());
    RANK_CHECK(*e && (*e)->devices == 3 && (*e)->joules == 10 + 30 + 40 && (*e)->seconds == 4,
               "rank {}: {} devices, {} J over {} s", rank, *e ? (*e)->devices : -1,
               *e ? (*e)->joules : -1.0, *e ? (*e)->seconds : -1.0);
    std::optional<RankEnergy> mine;
    if (rank != 3) mine = RankEnergy{device, 1.0, 1.0};
    Result<std::optional<RunEnergy>> partial = GatherEnergy(*ranks, mine);
    RANK_OK(partial.status());
    RANK_CHECK(!*partial, "rank {}: a total without rank 3's reading", rank);
    return {};
  });
  EXPECT_TRUE(AllRanksPassed(outcomes));
}

// The window: the steps throughput measures (after the warm-up) that this process ran.
TEST(EnergyTest, FromTheFirstMeasuredStepThisProcessRan) {
  EXPECT_EQ(FirstEnergyStep(1, 0), 1);    // one step: measured
  EXPECT_EQ(FirstEnergyStep(10, 0), 2);   // one warm-up step
  EXPECT_EQ(FirstEnergyStep(200, 0), 6);  // at most five
  EXPECT_EQ(FirstEnergyStep(200, 40), 41);
  EXPECT_EQ(FirstEnergyStep(200, 200), 201);  // resumed at the end: none
}

// metrics.json: joules per token of the measured steps this process ran (after a resume, not
// those before it), and null without a reading or for an evaluation.
TEST(EnergyTest, MetricsPerTokenOfTheStepsRun) {
  TrainSummary s;
  Result<ModelConfig> model = Preset("llama-tiny");
  ASSERT_TRUE(model.ok());
  s.model = *model;
  s.run = CpuRun(2);
  s.world_size = 2;
  s.platform = {{"cpu", {{"cores", 2}}}};
  for (int64_t step = 1; step <= 10; ++step) {
    StepRecord r;
    r.step = step;
    r.loss = 3.0;
    r.ms = 100;
    r.tokens = 1000;
    s.steps.push_back(r);
  }
  s.resumed_from_step = 4;  // steps 5..10 ran here: 6,000 tokens
  s.energy = RunEnergy{1200.0, 2, 0.6};
  nlohmann::json m = BuildMetrics(s);
  const nlohmann::json& e = m["energy"];
  ASSERT_TRUE(e.is_object()) << m.dump(2);
  EXPECT_EQ(e["joules"], 1200.0);
  EXPECT_EQ(e["tokens"], 6000);
  EXPECT_DOUBLE_EQ(e["joules_per_token"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(e["watts_per_device"].get<double>(), 1000.0);
  EXPECT_EQ(e["devices"], 2);
  EXPECT_EQ(e["source"], "nvml");

  s.resumed_from_step.reset();  // a fresh run: from the first measured step, the 2nd
  EXPECT_EQ(BuildMetrics(s)["energy"]["tokens"], 9000);

  s.energy.reset();
  EXPECT_TRUE(BuildMetrics(s)["energy"].is_null());
  s.energy = RunEnergy{1200.0, 2, 0.6};
  s.run.mode = RunMode::kEvaluate;
  EXPECT_TRUE(BuildMetrics(s)["energy"].is_null());
}

}  // namespace
}  // namespace bm::train
