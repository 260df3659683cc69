// Golden files for the three text formats over the fixture set. After an
// intended change: BENCHMAKE_UPDATE_GOLDEN=1 ctest -R Golden, then review the
// diff of tests/data/report/golden/.
#include <gtest/gtest.h>

#include "engine/report/csv.h"
#include "engine/report/json_report.h"
#include "engine/report/markdown.h"
#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

std::vector<ReportRow> Rows() { return BuildRows(testing::LoadFixtureSet()); }

TEST(Golden, Markdown) { testing::ExpectGolden("report.md", RenderMarkdown(Rows())); }
TEST(Golden, Csv) { testing::ExpectGolden("report.csv", RenderCsv(Rows())); }
TEST(Golden, Json) { testing::ExpectGolden("report.json", RenderJson(Rows())); }

TEST(Markdown, EscapesPipesAndMarksAbsentCells) {
  std::string table = MarkdownTable({"a", "b"}, {{"x|y", ""}});
  EXPECT_EQ(table, "| a | b |\n|---|---|\n| x\\|y | - |\n");
}

TEST(Csv, QuotesFieldsWithCommasAndQuotes) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(Json, RawValuesInBaseUnits) {
  nlohmann::json j = ReportJson(Rows());
  ASSERT_EQ(j["format"], "benchmake-report");
  const nlohmann::json& h100 = j["rows"][0];
  EXPECT_EQ(h100["metrics"]["tokens_per_device_per_s"]["n"], 3);
  EXPECT_LT(h100["metrics"]["mfu_6n"]["median"].get<double>(), 1.0);  // a fraction
  EXPECT_EQ(h100["origins"]["cache"], 1);
  EXPECT_EQ(h100["measurements"][1]["origin"], "cache");
}

}  // namespace
}  // namespace bm::report
