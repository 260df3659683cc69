#include "engine/report/report_table.h"

#include <gtest/gtest.h>

#include "engine/report/compare.h"
#include "engine/report/csv.h"
#include "engine/report/markdown.h"
#include "engine/report/metrics_view.h"
#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

TEST(MetricsView, PlatformLayoutAndFixHp) {
  Measurement m = testing::LoadRun("gpt3_6.7b.h200");
  EXPECT_EQ(DeviceName(m.metrics), "H200");
  EXPECT_EQ(DeviceCount(m.metrics), 8);
  EXPECT_EQ(ParallelLayout(m.metrics), "TP2PP1DP4");
  EXPECT_EQ(FixHp(m.metrics), "layers=16, MPE=2048, LBS=2, GAS=4, bf16, flash");
  EXPECT_EQ(TrainerName(m.metrics), "benchmake-train") << "from trainer_build";
  Measurement cpu = testing::LoadRun("tiny.cpu");
  EXPECT_EQ(DeviceName(cpu.metrics), "cpu");
  EXPECT_EQ(FixHp(cpu.metrics), "hidden=256, layers=4, MPE=256, LBS=8, fp32") << "GAS 1 left out";
}

TEST(MetricsView, ExternalTrainer) {
  nlohmann::json m = {
      {"config",
       {{"mpe", 4096}, {"lbs", nullptr}, {"gas", 2}, {"layout", "TP2PP1DP4"}, {"devices", 8}}},
      {"provenance", {{"trainer", "megatron"}, {"trainer_build", "megatron (log)"}}}};
  EXPECT_EQ(TrainerName(m), "megatron");
  EXPECT_EQ(FixHp(m), "MPE=4096, GAS=2") << "an unknown LBS is left out";
  m["config"]["zero"] = 2;
  m["config"]["grad_reduce"] = "bf16";
  EXPECT_EQ(FixHp(m), "MPE=4096, GAS=2, zero=2, grad_reduce=bf16");
  m["config"]["grad_reduce"] = "fp32";
  EXPECT_EQ(FixHp(m), "MPE=4096, GAS=2, zero=2") << "fp32, the default, is left out";
  m["config"]["attention_backward"] = "one_call";
  EXPECT_EQ(FixHp(m), "MPE=4096, GAS=2, zero=2, attention_backward=one_call");
  m["config"]["attention_backward"] = "auto";
  EXPECT_EQ(FixHp(m), "MPE=4096, GAS=2, zero=2") << "auto, the default, is left out";
  m["config"].erase("attention_backward");
  m["config"].erase("zero");
  m["config"].erase("grad_reduce");
  ReportRow row = BuildRow({"ext", "exec", {Measurement{m, {}, {}}}});
  EXPECT_EQ(row.trainer, "megatron");
  EXPECT_EQ(PlatformText(row), "?\u00d78") << "device unknown, 8 devices";
}

TEST(MetricsView, MissingFieldsReadAsAbsent) {
  nlohmann::json empty = nlohmann::json::object();
  EXPECT_EQ(DeviceName(empty), "");
  EXPECT_EQ(DeviceName({{"provenance", {{"device_name", "NVIDIA H200"}}}}), "H200");
  EXPECT_EQ(DeviceName({{"platform", {{"gpu_name", "H100"}}}}), "H100");
  EXPECT_EQ(DeviceCount(empty), 0);
  EXPECT_EQ(ParallelLayout(empty), "");
  EXPECT_EQ(FixHp(empty), "");
  EXPECT_EQ(TrainerName(empty), "");
  EXPECT_FALSE(NumberAt(nlohmann::json{{"a", "text"}}, "a"));
  EXPECT_FALSE(NumberAt(nlohmann::json{{"a", 1}}, "a.b"));
}

TEST(ReportTable, RoundsAreAggregatedAndOriginsCounted) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  ASSERT_FALSE(set.empty());
  ReportRow row = BuildRow(set[0]);  // llama2_7b.h100: 3 rounds, one restored
  EXPECT_EQ(row.rounds(), 3);
  EXPECT_EQ(row.fresh, 2);
  EXPECT_EQ(row.restored, 1);
  ASSERT_TRUE(row.tokens_per_device_per_s);
  EXPECT_EQ(row.tokens_per_device_per_s->median, 3912.4);
  EXPECT_EQ(row.tokens_per_device_per_s->min, 3890.1);
  EXPECT_EQ(row.tokens_per_device_per_s->max, 3935.7);
  EXPECT_EQ(OriginText(row), "2 fresh + 1 cache");
  EXPECT_EQ(PlatformText(row), "H100 80GB HBM3\u00d78");
  EXPECT_EQ(MemText(row), "62/80");  // whole GiB, as the suites print it
}

// An MLPerf run read by its time to train (docs/METRICS.md "mlperf"): NVIDIA's v4.0 ResNet result,
// run_start to run_stop 798.372 s = 13.3062 minutes, shown as 13.31.
MeasuredTarget MlperfResnet(double seconds) {
  nlohmann::json m = {{"mlperf", {{"benchmark", "resnet"}, {"time_to_train_s", seconds}}},
                      {"provenance", {{"trainer", "mllog"}}}};
  return {"resnet", "measure", {Measurement{m, {}, {}}}};
}

TEST(ReportTable, TimeToTrainColumnOnlyWhenARowHasOne) {
  const MeasuredTarget resnet = MlperfResnet(798.372);
  const ReportRow row = BuildRow(resnet);
  ASSERT_TRUE(row.time_to_train_s);
  EXPECT_EQ(row.time_to_train_s->median, 798.372);
  const ReportRow plain = BuildRow(testing::LoadFixtureSet().at(0));
  EXPECT_FALSE(plain.time_to_train_s);

  const std::string with = RenderMarkdown({plain, row});
  EXPECT_NE(with.find("| time to train (min) |"), std::string::npos) << with;
  EXPECT_NE(with.find("| 13.31 |"), std::string::npos) << with;
  const std::string without = RenderMarkdown({plain});
  EXPECT_EQ(without.find("time to train"), std::string::npos) << "the suites' columns alone";

  const std::string csv = RenderCsv({row});
  EXPECT_NE(csv.find(",time_to_train_min,"), std::string::npos);
  // No device or count: the submission's platform names the system (NVIDIA's, one DGX H100).
  nlohmann::json named = resnet.measurements[0].metrics;
  named["mlperf"]["platform"] = "1xNVIDIA DGX H100";
  EXPECT_EQ(DeviceName(named), "1xNVIDIA DGX H100");
  named["config"]["device"] = "H100";
  EXPECT_EQ(DeviceName(named), "H100") << "a device the BENCHFILE names wins";
  EXPECT_NE(csv.find(",13.31,"), std::string::npos) << csv;

  // compare: the two runs' time to train side by side (minutes); 798.372 s against 900 s.
  const Comparison c = Compare(resnet, MlperfResnet(900));
  auto ttt = std::find_if(c.metrics.begin(), c.metrics.end(),
                          [](const MetricDelta& d) { return d.id == "time_to_train_s"; });
  ASSERT_NE(ttt, c.metrics.end());
  EXPECT_EQ(*ttt->a, 798.372);
  EXPECT_EQ(*ttt->b, 900);
}

// An MLPerf evaluation's quality metric as metrics.json's eval block holds it (docs/METRICS.md
// "eval"): Dell's v5.0 RetinaNet, mAP 0.3439874455060702 at its last evaluation, the rules' 34.0%.
MeasuredTarget MlperfEval(nlohmann::json eval) {
  nlohmann::json m = {{"eval", std::move(eval)}, {"provenance", {{"trainer", "mllog"}}}};
  return {"retinanet", "measure", {Measurement{m, {}, {}}}};
}

TEST(ReportTable, QualityScoreByItsMetricWithTheTarget) {
  const MeasuredTarget map = MlperfEval({{"task", "MLPerf eval_accuracy"},
                                         {"val_loss", nullptr},
                                         {"accuracy", nullptr},
                                         {"quality",
                                          {{"metric", "mAP"},
                                           {"value", 0.3439874455060702},
                                           {"higher_is_better", true},
                                           {"target", 0.34},
                                           {"reached", true}}}});
  const ReportRow row = BuildRow(map);
  ASSERT_TRUE(row.quality);
  EXPECT_EQ(EvalText(row), "mAP 0.34399, target \u22650.34 (MLPerf eval_accuracy)");
  const std::string csv = RenderCsv({row});
  EXPECT_NE(csv.find(",quality,quality_metric,quality_target,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.34399,mAP,0.34,"), std::string::npos) << csv;

  // An accuracy keeps its column and percent; the target is shown as one.
  const ReportRow resnet = BuildRow(MlperfEval({{"task", "MLPerf eval_accuracy"},
                                                {"accuracy", 0.75936},
                                                {"quality",
                                                 {{"metric", "top-1 accuracy"},
                                                  {"value", 0.75936},
                                                  {"higher_is_better", true},
                                                  {"target", 0.759}}}}));
  EXPECT_FALSE(resnet.quality) << "shown as the accuracy";
  EXPECT_EQ(EvalText(resnet), "acc 75.9%, target \u226575.9% (MLPerf eval_accuracy)");
  // A loss below its target (Llama 2 70B LoRA's 0.925 eval loss).
  const ReportRow lora = BuildRow(MlperfEval({{"task", "MLPerf eval_accuracy"},
                                              {"val_loss", 0.9244517683982849},
                                              {"quality",
                                               {{"metric", "eval loss"},
                                                {"value", 0.9244517683982849},
                                                {"higher_is_better", false},
                                                {"target", 0.925}}}}));
  EXPECT_EQ(EvalText(lora), "val 0.924, target \u22640.925 (MLPerf eval_accuracy)");
  // A target without a direction (a benchmark the rules do not name): no side.
  const ReportRow unknown =
      BuildRow(MlperfEval({{"task", "MLPerf eval_accuracy"},
                           {"val_loss", 0.58},
                           {"quality", {{"metric", nullptr}, {"value", 0.58}, {"target", 0.6}}}}));
  EXPECT_EQ(EvalText(unknown), "val 0.580, target 0.600 (MLPerf eval_accuracy)");

  // compare: the two runs' mAP side by side, labelled by the metric.
  const Comparison c = Compare(map, map);
  auto q = std::find_if(c.metrics.begin(), c.metrics.end(),
                        [](const MetricDelta& d) { return d.id == "quality"; });
  ASSERT_NE(q, c.metrics.end());
  EXPECT_EQ(q->name, "quality (mAP)");
  EXPECT_EQ(*q->a, 0.3439874455060702);
}

// Two runs read by their time to train: no loss curve, so MLPerf's own check decides compare's
// verdict, each run's evaluations reaching the quality target.
MeasuredTarget MapRun(const std::string& name, double map, bool reached) {
  MeasuredTarget t = MlperfEval({{"task", "MLPerf eval_accuracy"},
                                 {"quality",
                                  {{"metric", "mAP"},
                                   {"value", map},
                                   {"higher_is_better", true},
                                   {"target", 0.34},
                                   {"reached", reached}}}});
  t.target = name;
  return t;
}

TEST(ReportTable, CompareOfTimeToTrainRunsChecksTheirQualityTargets) {
  const Comparison ok = Compare(MapRun("a100", 0.3441, true), MapRun("h100", 0.3402, true));
  EXPECT_TRUE(ok.aligned());
  EXPECT_FALSE(ok.alignment);
  EXPECT_EQ(ok.Verdict(),
            "QUALITY REACHED: both runs reached their quality target, what MLPerf checks of a run "
            "read by its time to train (no loss curve to align). a100: mAP 0.3441, target "
            "\u22650.34 (MLPerf eval_accuracy); h100: mAP 0.3402, target "
            "\u22650.34 (MLPerf eval_accuracy).");
  EXPECT_NE(RenderComparisonMarkdown(ok).find("### Quality target"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(RenderComparisonJson(ok))["quality_reached"], true);

  const Comparison missed = Compare(MapRun("a100", 0.3441, true), MapRun("h100", 0.3312, false));
  EXPECT_FALSE(missed.aligned());
  EXPECT_EQ(missed.Verdict().rfind("QUALITY NOT REACHED: h100 did not reach its quality target "
                                   "in any evaluation. a100: mAP 0.3441",
                                   0),
            0u)
      << missed.Verdict();
  EXPECT_EQ(Compare(MapRun("a", 0.1, false), MapRun("b", 0.2, false))
                .Verdict()
                .rfind("QUALITY NOT REACHED: neither run reached its quality target.", 0),
            0u);
  // A side that does not say (no target, or not an MLPerf run): not checked, as before.
  const Comparison unknown = Compare(MapRun("a", 0.3441, true), MlperfResnet(798.372));
  EXPECT_FALSE(unknown.aligned());
  EXPECT_FALSE(unknown.quality);
  EXPECT_EQ(unknown.Verdict(), "loss alignment not checked: a has no loss curve (log.jsonl)");
}

TEST(ReportTable, ACpuRunsMemoryIsMarkedHost) {
  ReportRow row;
  row.device = "cpu";
  row.mem_peak_bytes = Stat{0.4 * (1 << 30), 0.4 * (1 << 30), 0.4 * (1 << 30), 1};
  row.mem_total_bytes = Stat{31.3 * (1 << 30), 31.3 * (1 << 30), 31.3 * (1 << 30), 1};
  EXPECT_TRUE(IsHostRun(row));
  EXPECT_EQ(MemText(row), "0.4/31 host");
  row.device = "H100";
  EXPECT_FALSE(IsHostRun(row));
  EXPECT_EQ(MemText(row), "0.4/31");
}

TEST(ReportTable, ARestoredMeasurementIsNeverCalledFresh) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  ASSERT_GE(set.size(), 2u);
  ReportRow a800 = BuildRow(set[1]);
  EXPECT_EQ(a800.fresh, 0);
  EXPECT_EQ(OriginText(a800), "cache");
}

TEST(ReportTable, EvaluateRowHasOnlyEvalColumns) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  ASSERT_FALSE(set.empty());
  ReportRow eval = BuildRow(set.back());
  EXPECT_EQ(eval.rule, "evaluate");
  EXPECT_FALSE(eval.tokens_per_device_per_s);
  EXPECT_EQ(MemText(eval), "");
  EXPECT_EQ(EvalText(eval), "val 3.113, ppl 22.48, acc 61.3%, em 18.8% (instructions)");
}

}  // namespace
}  // namespace bm::report
