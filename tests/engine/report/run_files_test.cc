#include "engine/report/run_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace bm::report {
namespace {

// A metrics.json that is cut short, empty or not JSON is an error naming the file, the line
// and the column, so that a person can see where it broke.
class RunFilesTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "metrics.json", std::ios::binary) << text;
    return (dir_ / "metrics.json").string();
  }
  std::filesystem::path dir_;
};

TEST_F(RunFilesTest, TruncatedMetricsNamesLineAndColumn) {
  std::string path = Write("{\n  \"format\": \"benchmake-metrics\",\n  \"loss\": {\"final\": 2.");
  Result<Measurement> m = LoadRunFiles(dir_.string());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(m.status().message().rfind(path + ":3:23: not valid JSON: ", 0), 0u)
      << m.status().message();
}

TEST_F(RunFilesTest, EmptyAndNanMetricsAreLocated) {
  std::string path = Write("");
  Result<Measurement> m = LoadRunFiles(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind(path + ":1:1: not valid JSON: ", 0), 0u)
      << m.status().message();
  path = Write("{\"format\": \"benchmake-metrics\",\n \"loss\": {\"final\": NaN}}");
  m = LoadRunFiles(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind(path + ":2:20: not valid JSON: ", 0), 0u)
      << m.status().message();
}

// A number no double holds is no crash (nlohmann throws out_of_range, not parse_error).
TEST_F(RunFilesTest, OverflowingNumberIsAnError) {
  std::string path = Write("{\"format\": \"benchmake-metrics\", \"loss\": {\"final\": 1e999}}");
  Result<Measurement> m = LoadRunFiles(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), path + ":1: not valid JSON: number overflow parsing '1e999'");
}

// A figure of the wrong type is an error naming it, not a "-" in the table and exit 0.
TEST_F(RunFilesTest, FigureOfWrongTypeIsNamed) {
  std::string path = Write(
      "{\"format\": \"benchmake-metrics\", \"throughput\": {\"tokens_per_device_per_s\": "
      "\"fast\"}, \"loss\": {\"final\": null}}");
  Result<Measurement> m = LoadRunFiles(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(m.status().message(),
            path + ": throughput.tokens_per_device_per_s is \"fast\", not a number");
  path = Write("{\"format\": \"benchmake-metrics\", \"loss\": {\"final\": [1]}}");
  EXPECT_EQ(LoadRunFiles(path).status().message(), path + ": loss.final is [1], not a number");
}

}  // namespace
}  // namespace bm::report
