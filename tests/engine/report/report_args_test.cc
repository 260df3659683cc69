#include "engine/report/report_args.h"

#include <gtest/gtest.h>

namespace bm::report {
namespace {

TEST(ReportArgs, FormatFromFlagOrExtension) {
  Result<ReportArgs> a = ParseReportArgs({"x", "--format", "csv", "y"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->format, Format::kCsv);
  EXPECT_EQ(a->selectors, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ParseReportArgs({"-o", "r.html"})->format, Format::kHtml);
  EXPECT_EQ(ParseReportArgs({"-o", "r.json"})->format, Format::kJson);
  EXPECT_EQ(ParseReportArgs({})->format, Format::kMarkdown);
  EXPECT_EQ(ParseReportArgs({"-o", "r.html", "--format", "md"})->format, Format::kMarkdown);
}

TEST(ReportArgs, Errors) {
  EXPECT_EQ(ParseReportArgs({"--format", "pdf"}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseReportArgs({"--format"}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseReportArgs({"--bogus"}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(CompareArgs, AlignmentOptions) {
  Result<CompareArgs> c =
      ParseCompareArgs({"a", "b", "--from-step", "11", "--tolerance", "1.5%", "--worst", "3"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->a, "a");
  EXPECT_EQ(c->b, "b");
  EXPECT_EQ(c->alignment.from_step, 11);
  EXPECT_DOUBLE_EQ(c->alignment.tolerance, 0.015);
  EXPECT_EQ(c->alignment.worst, 3);
  EXPECT_TRUE(c->check_alignment);
  EXPECT_DOUBLE_EQ(ParseCompareArgs({"a", "b", "--tolerance", "2"})->alignment.tolerance, 0.02);
  EXPECT_FALSE(ParseCompareArgs({"a", "b", "--no-alignment"})->check_alignment);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "-o", "c.json"})->format, Format::kJson);
}

TEST(CompareArgs, Errors) {
  EXPECT_EQ(ParseCompareArgs({"a"}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "c"}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "--tolerance", "-1"}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "--tolerance", "x%"}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "--from-step", "-3"}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCompareArgs({"a", "b", "--format", "csv"}).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(Selectors, PathsAreRecognized) {
  EXPECT_TRUE(IsPathSelector("out/m"));
  EXPECT_TRUE(IsPathSelector("metrics.json"));
  EXPECT_FALSE(IsPathSelector("llama2_7b.h100"));
  EXPECT_FALSE(IsPathSelector("m@h100"));
}

}  // namespace
}  // namespace bm::report
