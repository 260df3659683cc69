#include "base/mllog.h"

#include <gtest/gtest.h>

#include <sstream>

namespace bm::mllog {
namespace {

TEST(Mllog, LineMatchesMlperfLoggingFormat) {
  EXPECT_EQ(FormatLine("", 1763715600000, EventType::kPointInTime, kSeed, 1234,
                       {{"file", "train.cc"}, {"lineno", 88}}),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1763715600000, \"event_type\": "
            "\"POINT_IN_TIME\", \"key\": \"seed\", \"value\": 1234.0, \"metadata\": {\"file\": "
            "\"train.cc\", \"lineno\": 88}}");
}

TEST(Mllog, SeparatorsInsideStringsAreKept) {
  std::string line =
      FormatLine("", 1, EventType::kIntervalEnd, kRunStop, nullptr, {{"status", "a,b:c \"q\""}});
  EXPECT_NE(line.find("\"a,b:c \\\"q\\\"\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"event_type\": \"INTERVAL_END\""), std::string::npos);
  EXPECT_NE(line.find("\"value\": null"), std::string::npos);
  std::string backslash = FormatLine("", 1, EventType::kPointInTime, "k", "a\\", {{"x", 1}});
  EXPECT_NE(backslash.find("\"value\": \"a\\\\\", \"metadata\": {\"x\": 1}"), std::string::npos)
      << backslash;
}

TEST(Mllog, LoggerFillsTimeFileAndLine) {
  std::ostringstream out;
  int64_t now = 1000;
  Logger log(out, [&] { return now++; });
  log.Start(kInitStart);
  log.End(kRunStop, nullptr, {{"status", "success"}});
  std::string text = out.str();
  std::istringstream lines(text);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  ASSERT_EQ(first.rfind(":::MLLOG ", 0), 0u);
  nlohmann::json a = nlohmann::json::parse(first.substr(9));
  nlohmann::json b = nlohmann::json::parse(second.substr(9));
  EXPECT_EQ(a["time_ms"], 1000);
  EXPECT_EQ(b["time_ms"], 1001);
  EXPECT_EQ(a["event_type"], "INTERVAL_START");
  EXPECT_EQ(a["metadata"]["file"], "mllog_test.cc");
  EXPECT_GT(a["metadata"]["lineno"].get<int>(), 0);
  EXPECT_EQ(b["metadata"]["status"], "success");
  // Caller metadata comes after file and lineno, as in mllog.py.
  EXPECT_LT(second.find("\"lineno\""), second.find("\"status\""));
  EXPECT_NE(
      FormatLine("", 1, EventType::kPointInTime, kCacheClear, true, {}).find("\"value\": 1.0"),
      std::string::npos);
}

}  // namespace
}  // namespace bm::mllog
