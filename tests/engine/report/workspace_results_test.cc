// Labels of measurements taken from the engine's results: never fresh when
// restored, remeasurements fresh only when taken here after out/NAME was
// written; the loss curve comes from out/NAME/log.jsonl.
#include "engine/report/workspace_results.h"

#include <gtest/gtest.h>

#include "tests/support/memory_filesystem.h"

namespace bm::report {
namespace {

cache::RecordedMeasurement Remeasured(const std::string& host, const std::string& date,
                                      double tps) {
  cache::RecordedMeasurement m;
  m.metrics = {{"throughput", {{"tokens_per_device_per_s", tps}}}};
  m.provenance.host = host;
  m.provenance.date = date;
  return m;
}

engine::TargetResult Result1(bool fresh) {
  engine::TargetResult r;
  r.name = "m";
  r.rule = "measure";
  r.built = true;
  r.up_to_date = true;
  r.fresh = fresh;
  r.materialized_at = "2026-11-21T09:00:00Z";
  r.out_dir = "/ws/out/m";
  r.record.metrics = {{"format", "benchmake-metrics"},
                      {"throughput", {{"tokens_per_device_per_s", 100.0}}},
                      {"provenance", {{"trainer_build", "t1"}}}};
  r.record.provenance.host = "here";
  r.record.provenance.date = "2026-11-21T08:59:00Z";
  r.record.provenance.platform = {{"gpu_name", "H100"}};
  return r;
}

TEST(WorkspaceResults, RestoredRecordAndOldRemeasurementsAreCache) {
  testing::MemoryFilesystem fs;
  engine::TargetResult r = Result1(/*fresh=*/false);
  r.record.remeasurements = {Remeasured("here", "2026-11-21T08:00:00Z", 101),   // before
                             Remeasured("there", "2026-11-21T10:00:00Z", 102),  // elsewhere
                             Remeasured("here", "2026-11-21T09:30:00Z", 103)};  // here, after
  Result<MeasuredTarget> t = FromTargetResult(r, fs, "here");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->measurements.size(), 4u);
  EXPECT_EQ(t->measurements[0].provenance.origin, Origin::kRestored);
  EXPECT_EQ(t->measurements[1].provenance.origin, Origin::kRestored);
  EXPECT_EQ(t->measurements[2].provenance.origin, Origin::kRestored);
  EXPECT_EQ(t->measurements[3].provenance.origin, Origin::kFresh);
  EXPECT_EQ(t->measurements[0].provenance.trainer_build, "t1");
  EXPECT_EQ(t->measurements[0].provenance.host, "here");
  // Metrics without a platform get the record's platform facts.
  EXPECT_EQ(t->measurements[0].metrics["platform"]["gpu_name"], "H100");
}

// A CPU run's provenance names the BLAS kernels it ran (its speed is theirs);
// a GPU run's does not.
TEST(WorkspaceResults, ACpuRunsBuildNamesItsBlasKernels) {
  testing::MemoryFilesystem fs;
  engine::TargetResult r = Result1(/*fresh=*/true);
  r.record.metrics["config"] = {{"device", "cpu"}};
  r.record.metrics["platform"] = {
      {"blas", {{"library", "OpenBLAS"}, {"version", "0.3.21"}, {"core", "SkylakeX"}}}};
  Result<MeasuredTarget> t = FromTargetResult(r, fs, "here");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->measurements.back().provenance.trainer_build,
            "t1; OpenBLAS 0.3.21, SkylakeX kernels");
  r.record.metrics["config"]["device"] = "cuda";
  t = FromTargetResult(r, fs, "here");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->measurements.back().provenance.trainer_build, "t1");
}

TEST(WorkspaceResults, FreshRecordAndLossCurveFromOut) {
  testing::MemoryFilesystem fs;
  ASSERT_TRUE(fs.MakeDirs("/ws/out/m").ok());
  ASSERT_TRUE(fs.WriteFileAtomic("/ws/out/m/log.jsonl",
                                 "{\"format\":\"benchmake-log\",\"version\":1}\n"
                                 "{\"step\":1,\"loss\":9.0}\n{\"step\":2,\"loss\":8.0}\n")
                  .ok());
  Result<MeasuredTarget> t = FromTargetResult(Result1(/*fresh=*/true), fs, "here");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->measurements[0].provenance.origin, Origin::kFresh);
  ASSERT_EQ(t->measurements[0].losses.size(), 2u);
  EXPECT_EQ(t->measurements[0].losses[1].loss, 8.0);
}

TEST(WorkspaceResults, BadLossLogIsAnError) {
  testing::MemoryFilesystem fs;
  ASSERT_TRUE(fs.MakeDirs("/ws/out/m").ok());
  ASSERT_TRUE(fs.WriteFileAtomic("/ws/out/m/log.jsonl", "oops\n").ok());
  Result<MeasuredTarget> t = FromTargetResult(Result1(true), fs, "here");
  EXPECT_EQ(t.status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace bm::report
