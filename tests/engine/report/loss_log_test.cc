#include "engine/report/loss_log.h"

#include <gtest/gtest.h>

namespace bm::report {
namespace {

TEST(LossLog, ReadsStepAndLossIgnoringOtherFields) {
  Result<std::vector<LossPoint>> p = ParseLossLog(
      "{\"step\": 1, \"loss\": 9.5, \"lr\": 1e-4}\n\n{\"step\": 2, \"loss\": 8}\n", "log.jsonl");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[1].step, 2);
  EXPECT_EQ((*p)[1].loss, 8.0);
}

// An fp16 step that overflowed in the forward pass logs a null loss: no point, but its step
// still counts for the order.
TEST(LossLog, NullLossGivesNoPoint) {
  Result<std::vector<LossPoint>> p = ParseLossLog(
      "{\"step\": 1, \"loss\": 9.5}\n{\"step\": 2, \"loss\": null, \"skipped\": true}\n"
      "{\"step\": 3, \"loss\": 9}\n",
      "log.jsonl");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[1].step, 3);
  EXPECT_EQ(
      ParseLossLog("{\"step\":2,\"loss\":null}\n{\"step\":2,\"loss\":1}", "x").status().message(),
      "x:2: step 2 does not follow step 2");
}

TEST(LossLog, ErrorsNameTheLine) {
  auto bad = [](const char* text) { return ParseLossLog(text, "x.jsonl").status().message(); };
  EXPECT_EQ(bad("{\"step\":1,\"loss\":2}\n[1]\n"), "x.jsonl:2: not a JSON object");
  EXPECT_EQ(bad("{\"loss\":2}"), "x.jsonl:1: \"step\" missing or not an integer");
  EXPECT_EQ(bad("{\"step\":1,\"loss\":\"a\"}"), "x.jsonl:1: \"loss\" missing or not a number");
  EXPECT_EQ(bad("{\"step\":2,\"loss\":1}\n{\"step\":2,\"loss\":1}"),
            "x.jsonl:2: step 2 does not follow step 2");
  EXPECT_EQ(ParseLossLog("[1]", "x").status().code(), ErrorCode::kCorrupt);
}

// A line that is not JSON at all (cut short, a NaN Python's json.dumps writes) is named with
// its line and column, and said to be no JSON, not "not a JSON object".
TEST(LossLog, InvalidJsonNamesLineAndColumn) {
  auto bad = [](const char* text) { return ParseLossLog(text, "x.jsonl").status().message(); };
  EXPECT_EQ(bad("{\"step\":1,\"loss\":2}\nnot json\n").rfind("x.jsonl:2:2: not valid JSON: ", 0),
            0u)
      << bad("{\"step\":1,\"loss\":2}\nnot json\n");
  EXPECT_EQ(bad("{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":NaN}\n")
                .rfind("x.jsonl:2:18: not valid JSON: ", 0),
            0u);
  EXPECT_EQ(bad("{\"step\":1,\"lo").rfind("x.jsonl:1:14: not valid JSON: ", 0), 0u)
      << bad("{\"step\":1,\"lo");
}

}  // namespace
}  // namespace bm::report

namespace bm::report {
namespace {

TEST(LossLog, HeaderLineIsCheckedAndSkipped) {
  Result<std::vector<LossPoint>> p = ParseLossLog(
      "{\"format\": \"benchmake-log\", \"version\": 1}\n{\"step\": 1, \"loss\": 9.5}\n", "l");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->size(), 1u);
  EXPECT_EQ(ParseLossLog("{\"format\": \"benchmake-log\", \"version\": 2}\n", "l").status().code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(ParseLossLog("{\"format\": \"other\"}\n", "l").status().message(),
            "l:1: format is \"other\", expected \"benchmake-log\"");
}

}  // namespace
}  // namespace bm::report
