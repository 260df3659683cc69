// MLPerf's score over several runs. The expected scores are those of mlperf_logging's own
// `_compute_olympic_average` (result_summarizer.py, mlcommons/logging at 2026-07-29), run on the
// same times: 13.303333 (five runs), 13.466667 (one of five not converged), 14.0 (three runs),
// None (two runs), 119.5 (U-Net3D, 40 runs, three not converged: the mean of the converged
// runs 5 to 36 when sorted); and by hand where the rules say none (more runs not converged than
// dropped).
#include "engine/report/mlperf_score.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/report/compare.h"
#include "engine/report/csv.h"
#include "engine/report/json_report.h"
#include "engine/report/markdown.h"
#include "engine/report/report_table.h"

namespace bm::report {
namespace {

std::vector<std::optional<double>> Minutes(std::initializer_list<double> minutes) {
  std::vector<std::optional<double>> out;
  for (double m : minutes) out.push_back(m < 0 ? std::nullopt : std::optional<double>(m * 60));
  return out;
}

TEST(MlperfScore, OlympicMeanOfFiveResnetRuns) {
  const MlperfScore s = ScoreMlperfRuns("resnet", Minutes({13.31, 12.90, 13.80, 13.10, 13.50}));
  ASSERT_TRUE(s.seconds);
  EXPECT_NEAR(*s.seconds / 60, 13.303333333333333, 1e-12);
  EXPECT_EQ(s.runs, 5);
  EXPECT_EQ(s.not_converged, 0);
  EXPECT_EQ(s.required, 5);
}

TEST(MlperfScore, ARunThatDidNotConvergeIsOneOfTheSlowest) {
  // Four converged (12.90, 13.10, 13.50, 13.80) and one aborted: only the fastest is dropped.
  const MlperfScore s = ScoreMlperfRuns("resnet", Minutes({13.50, -1, 12.90, 13.80, 13.10}));
  ASSERT_TRUE(s.seconds);
  EXPECT_NEAR(*s.seconds / 60, 13.466666666666667, 1e-12);
  EXPECT_EQ(s.not_converged, 1);
  // Two that did not converge are more than the one MLPerf drops: no score.
  EXPECT_FALSE(ScoreMlperfRuns("resnet", Minutes({13.5, -1, 12.9, -1, 13.1})).seconds);
}

TEST(MlperfScore, TooFewRunsHaveNoScore) {
  EXPECT_NEAR(*ScoreMlperfRuns("gpt3", Minutes({15, 13, 14})).seconds / 60, 14.0, 1e-12);
  const MlperfScore two = ScoreMlperfRuns("gpt3", Minutes({13, 14}));
  EXPECT_FALSE(two.seconds);
  EXPECT_EQ(two.runs, 2);
  EXPECT_EQ(two.required, 3);
  EXPECT_EQ(ScoreMlperfRuns("next_year", Minutes({1, 2, 3})).required, 0) << "unknown";
  EXPECT_EQ(ScoreMlperfRuns("gpt-oss-20b", Minutes({1})).required, 10) << "as Primus names it";
}

TEST(MlperfScore, Unet3dDropsFourEachSide) {
  std::vector<std::optional<double>> runs;
  for (int i = 36; i >= 0; --i) runs.push_back(100.0 + i);  // 37 converged, out of order
  for (int i = 0; i < 3; ++i) runs.push_back(std::nullopt);
  const MlperfScore s = ScoreMlperfRuns("unet3d", runs);
  ASSERT_TRUE(s.seconds);
  EXPECT_DOUBLE_EQ(*s.seconds, 119.5);
  EXPECT_EQ(s.required, 40);
  runs.push_back(std::nullopt);
  runs.push_back(std::nullopt);  // five not converged: more than four
  EXPECT_FALSE(ScoreMlperfRuns("unet3d", runs).seconds);
}

// A target measured in rounds, each an MLPerf ResNet result (docs/METRICS.md "mlperf").
MeasuredTarget Rounds(const std::vector<std::optional<double>>& seconds) {
  MeasuredTarget t{"resnet", "measure", {}};
  for (const std::optional<double>& s : seconds) {
    nlohmann::json m = {{"mlperf",
                         {{"benchmark", "resnet"},
                          {"status", s ? "success" : "aborted"},
                          {"time_to_train_s", s ? nlohmann::json(*s) : nlohmann::json(nullptr)}}},
                        {"provenance", {{"trainer", "mllog"}}}};
    t.measurements.push_back(Measurement{m, {}, {}});
  }
  return t;
}

TEST(MlperfScore, TheReportShowsTheScoreOfTheRounds) {
  const MeasuredTarget five = Rounds(Minutes({13.31, 12.90, 13.80, 13.10, 13.50}));
  const ReportRow row = BuildRow(five);
  EXPECT_EQ(TimeToTrainText(row), "13.30 (12.90\u201313.80; 5 runs)");
  const ReportRow three = BuildRow(Rounds(Minutes({13.31, -1, 12.90, 13.10})));
  EXPECT_EQ(TimeToTrainText(three), "13.21 (12.90\u201313.31; 4 of 5 runs, 1 not converged)");
  // Two rounds: MLPerf has no score; the median (min–max), as every other cell.
  EXPECT_EQ(TimeToTrainText(BuildRow(Rounds(Minutes({13.0, 14.0})))), "13.50 (13.00\u201314.00)");
  // One: the run's own time.
  EXPECT_EQ(TimeToTrainText(BuildRow(Rounds(Minutes({13.31})))), "13.31");

  const std::string md = RenderMarkdown({row});
  EXPECT_NE(md.find("| 13.30 (12.90\u201313.80; 5 runs) |"), std::string::npos) << md;
  EXPECT_NE(md.find("over three or more runs MLPerf's score"), std::string::npos) << md;
  const std::string csv = RenderCsv({row});
  EXPECT_NE(csv.find(",time_to_train_min,mlperf_score_min,mlperf_runs,"), std::string::npos);
  EXPECT_NE(csv.find(",13.31,13.30,5,"), std::string::npos) << csv;  // median, score, runs
  const nlohmann::json j = ReportJson({row});
  EXPECT_NEAR(j["rows"][0]["mlperf_score"]["time_to_train_s"].get<double>(), 798.2, 1e-9);
  EXPECT_EQ(j["rows"][0]["mlperf_score"]["required"], 5);

  const Comparison c = Compare(five, Rounds(Minutes({14.0, 14.0, 14.0})));
  auto s = std::find_if(c.metrics.begin(), c.metrics.end(),
                        [](const MetricDelta& d) { return d.id == "mlperf_score_s"; });
  ASSERT_NE(s, c.metrics.end());
  EXPECT_NEAR(*s->a, 798.2, 1e-9);
  EXPECT_NEAR(*s->b, 840.0, 1e-9);
}

TEST(MlperfScore, ATableWithoutMlperfRunsKeepsItsLegend) {
  ReportRow plain;
  plain.target = "pretrain";
  EXPECT_EQ(RenderMarkdown({plain}).find("MLPerf's score"), std::string::npos);
}

}  // namespace
}  // namespace bm::report
