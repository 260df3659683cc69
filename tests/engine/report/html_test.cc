// Structure of the HTML report without a browser (html_browser_test.cc renders
// it in Chromium).
#include "engine/report/html.h"

#include <gtest/gtest.h>

#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Html, SelfContained) {
  std::string html = RenderHtml(testing::LoadFixtureSet());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* external : {"http://", "https://", "src=", "<link", "@import", "url("}) {
    // The SVG namespace URI is an identifier, not a fetch.
    std::string rest = html;
    size_t ns = 0;
    while ((ns = rest.find("http://www.w3.org/2000/svg")) != std::string::npos) {
      rest.erase(ns, 26);
    }
    EXPECT_EQ(rest.find(external), std::string::npos) << external;
  }
  EXPECT_EQ(Count(html, "<script"), 1u);  // the JSON data block only: no code
  EXPECT_NE(html.find("type=\"application/json\""), std::string::npos);
}

TEST(Html, ChartsTablesAndRestoredRows) {
  std::string html = RenderHtml(testing::LoadFixtureSet());
  for (const char* id :
       {"id=\"loss-chart\"", "id=\"tokens-chart\"", "id=\"mfu-chart\"", "id=\"energy-chart\"",
        "id=\"results\"", "id=\"provenance\"", "id=\"y-log\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  // 5 targets have loss curves, each drawn on both scales.
  EXPECT_EQ(Count(html, "class=\"series\""), 10u);
  // token/p/s bars for 5 targets; MFU bars: 6N and PaLM for 5 targets (tiny.cpu has a cpu peak);
  // energy bars for the 4 GPU targets.
  EXPECT_EQ(Count(html, "class=\"bar\""), 5u + 10u + 4u);
  // Rounds that vary get whiskers (llama2_7b.h100 in the three bar charts: 1 + 2 + 1).
  EXPECT_EQ(Count(html, "class=\"whisker\""), 4u);
  EXPECT_EQ(Count(html, "<tr class=\"restored\">"), 2u + 2u);  // results + provenance rows
  EXPECT_EQ(Count(html, "</script>"), 1u);                     // no early close inside the data
}

TEST(Html, EmptySelectionSaysNoData) {
  std::string html = RenderHtml({});
  EXPECT_EQ(Count(html, "class=\"empty\""), 3u);            // loss, token/p/s, MFU
  EXPECT_EQ(html.find("energy-chart"), std::string::npos);  // drawn only with GPU runs
}

TEST(Html, NamesAreEscaped) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  ASSERT_FALSE(set.empty());
  set[0].target = "<b>x</b>";
  std::string html = RenderHtml(set);
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
}

}  // namespace
}  // namespace bm::report
