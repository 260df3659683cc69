// Remeasurements in the action record (cache/action_record.h): they round-trip,
// and a record without them keeps its exact bytes (no field is added).
#include <gtest/gtest.h>

#include "cache/action_record.h"

namespace bm::cache {
namespace {

ActionRecord Sample() {
  ActionRecord r;
  r.key = Hasher().Finish();
  r.target = "m";
  r.metrics = {{"throughput", {{"tokens_per_device_per_s", 100.0}}}};
  r.provenance.host = "h1";
  r.provenance.date = "2026-11-21T09:00:00Z";
  return r;
}

TEST(ActionRecordRemeasure, RoundTrip) {
  ActionRecord r = Sample();
  RecordedMeasurement m;
  m.metrics = {{"throughput", {{"tokens_per_device_per_s", 104.5}}}};
  m.log_digest = "00";
  m.provenance.host = "h2";
  m.provenance.date = "2026-11-21T10:00:00Z";
  m.provenance.duration_s = 3.5;
  r.remeasurements.push_back(m);
  Result<ActionRecord> back = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->remeasurements.size(), 1u);
  EXPECT_EQ(back->remeasurements[0].metrics, m.metrics);
  EXPECT_EQ(back->remeasurements[0].provenance.host, "h2");
  EXPECT_EQ(back->remeasurements[0].provenance.duration_s, 3.5);
  EXPECT_EQ(back->remeasurements[0].log_digest, "00");
}

TEST(ActionRecordRemeasure, AbsentWhenEmpty) {
  std::string bytes = SerializeRecord(Sample());
  EXPECT_EQ(bytes.find("remeasurements"), std::string::npos);
  Result<ActionRecord> back = ParseRecord(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->remeasurements.empty());
}

TEST(ActionRecordRemeasure, MalformedIsCorrupt) {
  std::string bytes = SerializeRecord(Sample());
  size_t brace = bytes.rfind('}');
  bytes.insert(brace, ", \"remeasurements\": 7");
  EXPECT_EQ(ParseRecord(bytes).status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace bm::cache
