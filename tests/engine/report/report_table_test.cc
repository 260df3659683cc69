#include "engine/report/report_table.h"

#include <gtest/gtest.h>

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
