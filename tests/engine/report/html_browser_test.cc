// The HTML report in a real browser: headless Chromium (Debian's `chromium`)
// loads the page with a probe script appended, which reports what the browser
// laid out and painted: chart sizes, the bounding boxes of every visible curve
// and bar, the linear/log switch after a click, the table cells, and per chart
// the painted pixels (the SVG drawn onto a canvas). The test then checks that
// the charts exist and are not blank and that the page's numbers equal the
// report's JSON, rounded here with printf (not with the report's own code).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/report/html.h"
#include "engine/report/json_report.h"
#include "engine/report/number_format.h"
#include "engine/report/report_table.h"
#include "engine/report/run_files.h"
#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

constexpr const char* kProbe = R"js(
<pre id="probe"></pre>
<script>
(function () {
  var out = {charts: {}, pixels: {}};
  function visible(root, sel) {
    return Array.from(root.querySelectorAll(sel)).filter(function (e) {
      return e.getClientRects().length > 0;
    }).map(function (e) {
      var b = e.getBBox(), s = getComputedStyle(e);
      return {series: e.dataset.series, w: b.width, h: b.height, stroke: s.stroke, fill: s.fill};
    });
  }
  ['loss-chart', 'tokens-chart', 'mfu-chart', 'energy-chart'].forEach(function (id) {
    var svg = document.getElementById(id);
    if (!svg) return;
    var r = svg.getBoundingClientRect();
    out.charts[id] = {
      w: r.width, h: r.height,
      visible: visible(svg, 'path.series, rect.bar'),
      bars: Array.from(svg.querySelectorAll('rect.bar')).map(function (b) {
        return [b.dataset.series, b.dataset.value];
      }),
      labels: Array.from(svg.querySelectorAll('text.value')).map(function (t) {
        return t.textContent;
      })
    };
  });
  document.getElementById('y-log').click();
  var chart = document.getElementById('loss-chart');
  out.log = {
    lin: getComputedStyle(chart.querySelector('.y-lin')).display,
    log: getComputedStyle(chart.querySelector('.y-log')).display,
    visible: visible(chart.querySelector('.y-log'), 'path.series')
  };
  out.results = Array.from(document.querySelectorAll('#results tbody tr')).map(function (tr) {
    var o = {};
    tr.querySelectorAll('td').forEach(function (td) { o[td.dataset.col] = td.textContent; });
    o._restored = tr.classList.contains('restored');
    return o;
  });
  out.data = document.getElementById('report-data').textContent;
  var pending = 0;
  ['loss-chart', 'tokens-chart', 'mfu-chart', 'energy-chart'].forEach(function (id) {
    var svg = document.getElementById(id);
    var img = new Image();
    pending++;
    img.onload = function () {
      var c = document.createElement('canvas');
      c.width = svg.width.baseVal.value; c.height = svg.height.baseVal.value;
      var ctx = c.getContext('2d');
      ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, c.width, c.height);
      ctx.drawImage(img, 0, 0);
      var d = ctx.getImageData(0, 0, c.width, c.height).data, ink = 0, colors = {};
      for (var i = 0; i < d.length; i += 4) {
        if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) ink++;
        var key = d[i] + ',' + d[i + 1] + ',' + d[i + 2];
        colors[key] = (colors[key] || 0) + 1;
      }
      out.pixels[id] = {ink: ink, total: d.length / 4, colors: colors};
      if (--pending === 0) document.getElementById('probe').textContent = JSON.stringify(out);
    };
    img.onerror = function () {
      out.pixels[id] = {error: true};
      if (--pending === 0) document.getElementById('probe').textContent = JSON.stringify(out);
    };
    img.src = 'data:image/svg+xml;charset=utf-8,' +
              encodeURIComponent(new XMLSerializer().serializeToString(svg));
  });
})();
</script>
)js";

std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

std::string Unescape(std::string s) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"},
                          {"&gt;", ">"},
                          {"&quot;", "\""},
                          {"&#39;", "'"},
                          {"&amp;", "&"}}) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
      s.replace(p, from.size(), to);
    }
  }
  return s;
}

std::string Printf(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

class HtmlInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (apt-get install chromium): the HTML report "
                      "is NOT checked in a browser";
    }
    dir_ = std::filesystem::temp_directory_path() / ("bm_html_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Renders `html` with the probe; returns the probe's JSON.
  nlohmann::json Probe(std::string html) {
    size_t body = html.rfind("</body>");
    html.insert(body, kProbe);
    std::ofstream(dir_ / "page.html") << html;
    std::string cmd = chromium_ +
                      " --headless --no-sandbox --disable-gpu --disable-background-networking "
                      "--disable-component-update --disable-sync --no-first-run "
                      "--virtual-time-budget=10000 --window-size=1200,2400 --user-data-dir=" +
                      (dir_ / "profile").string() + " --dump-dom file://" +
                      (dir_ / "page.html").string() + " > " + (dir_ / "dom.html").string() +
                      " 2> " + (dir_ / "chromium.log").string();
    int rc = std::system(("timeout 120 " + cmd).c_str());
    EXPECT_EQ(rc, 0) << cmd;
    Result<std::string> dom = ReadWholeFile((dir_ / "dom.html").string());
    if (!dom.ok()) return nullptr;
    const std::string open = "<pre id=\"probe\">";
    size_t begin = dom->find(open);
    size_t end = begin == std::string::npos ? begin : dom->find("</pre>", begin);
    if (end == std::string::npos) {
      ADD_FAILURE() << "no probe output in the dumped DOM";
      return nullptr;
    }
    std::string text = dom->substr(begin + open.size(), end - begin - open.size());
    nlohmann::json j = nlohmann::json::parse(Unescape(text), nullptr, false);
    EXPECT_TRUE(j.is_object()) << "probe did not finish: '" << text.substr(0, 200) << "'";
    return j;
  }

  std::string chromium_;
  std::filesystem::path dir_;
};

TEST_F(HtmlInBrowser, ChartsAreDrawnAndNotBlank) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  nlohmann::json p = Probe(RenderHtml(set));
  ASSERT_TRUE(p.is_object());
  for (const char* id : {"loss-chart", "tokens-chart", "mfu-chart", "energy-chart"}) {
    const nlohmann::json& c = p["charts"][id];
    ASSERT_TRUE(c.is_object()) << id << " missing";
    EXPECT_GT(c["w"].get<double>(), 300) << id;
    EXPECT_GT(c["h"].get<double>(), 200) << id;
    for (const nlohmann::json& v : c["visible"]) {
      EXPECT_GT(v["w"].get<double>(), 1) << id << " " << v.dump();
      EXPECT_GT(v["h"].get<double>(), 1) << id << " " << v.dump();
    }
    const nlohmann::json& px = p["pixels"][id];
    ASSERT_FALSE(px.contains("error")) << id << ": the browser could not paint the SVG";
    // Not blank: a fair share of the chart is painted.
    EXPECT_GT(px["ink"].get<double>(), 0.03 * px["total"].get<double>()) << id;
  }
  // Linear scale first: 5 loss curves visible, stroked.
  const nlohmann::json& loss = p["charts"]["loss-chart"]["visible"];
  EXPECT_EQ(loss.size(), 5u);
  for (const nlohmann::json& v : loss) EXPECT_NE(v["stroke"], "none");
  // Bars are painted in their target's color (Okabe–Ito blue for the first).
  EXPECT_GT(p["pixels"]["tokens-chart"]["colors"].value("0,114,178", 0), 500);
  EXPECT_EQ(p["charts"]["tokens-chart"]["visible"].size(), 5u);
  EXPECT_EQ(p["charts"]["mfu-chart"]["visible"].size(), 10u);
  EXPECT_EQ(p["charts"]["energy-chart"]["visible"].size(), 4u);  // the GPU targets
  // The switch: after clicking "log", only the log group shows, with 5 curves.
  EXPECT_EQ(p["log"]["lin"], "none");
  EXPECT_NE(p["log"]["log"], "none");
  EXPECT_EQ(p["log"]["visible"].size(), 5u);
}

TEST_F(HtmlInBrowser, NumbersInThePageEqualTheJson) {
  std::vector<MeasuredTarget> set = testing::LoadFixtureSet();
  std::vector<ReportRow> rows = BuildRows(set);
  nlohmann::json expected = ReportJson(rows);
  nlohmann::json p = Probe(RenderHtml(set));
  ASSERT_TRUE(p.is_object());
  EXPECT_EQ(nlohmann::json::parse(p["data"].get<std::string>()), expected);

  const nlohmann::json& shown = p["results"];
  ASSERT_EQ(shown.size(), expected["rows"].size());
  std::map<std::string, std::string> bar_values, energy_bars;
  for (const nlohmann::json& b : p["charts"]["tokens-chart"]["bars"]) bar_values[b[0]] = b[1];
  for (const nlohmann::json& b : p["charts"]["energy-chart"]["bars"]) energy_bars[b[0]] = b[1];
  std::set<std::string> labels;
  for (const nlohmann::json& l : p["charts"]["tokens-chart"]["labels"]) labels.insert(l);
  int checked = 0;
  for (size_t i = 0; i < shown.size(); ++i) {
    const nlohmann::json& row = expected["rows"][i];
    const nlohmann::json& m = row["metrics"];
    const nlohmann::json& cells = shown[i];
    EXPECT_EQ(cells["case"], row["target"]);
    EXPECT_EQ(cells["rounds"], std::to_string(row["rounds"].get<int>()));
    EXPECT_EQ(cells["_restored"], row["origins"]["cache"].get<int>() > 0);
    auto starts = [&](const char* col, const std::string& text) {
      EXPECT_EQ(cells[col].get<std::string>().rfind(text, 0), 0u)
          << row["target"] << " " << col << ": '" << cells[col] << "' vs '" << text << "'";
      ++checked;
    };
    if (m.contains("tokens_per_device_per_s")) {
      double v = m["tokens_per_device_per_s"]["median"];
      std::string whole = GroupThousands(Printf("%.0f", v));  // the suites' integers
      starts("tokens", whole);
      EXPECT_EQ(std::stod(bar_values[row["target"]]), v) << row["target"];
      EXPECT_TRUE(labels.count(whole)) << row["target"];
    }
    if (m.contains("mfu_6n"))
      starts("mfu_6n", Printf("%.1f%%", 100 * m["mfu_6n"]["median"].get<double>()));
    if (m.contains("mfu_palm")) {
      starts("mfu_palm", Printf("%.1f%%", 100 * m["mfu_palm"]["median"].get<double>()));
    }
    if (m.contains("joules_per_token")) {
      EXPECT_EQ(std::stod(energy_bars[row["target"]]), m["joules_per_token"]["median"])
          << row["target"];
      ++checked;
    }
    if (m.contains("loss")) starts("loss", Printf("%.3f", m["loss"]["median"]));
    if (m.contains("mem_peak_bytes")) {
      double gib = m["mem_peak_bytes"]["median"].get<double>() / (1 << 30);
      starts("mem", Printf(gib >= 9.95 ? "%.0f" : "%.1f", gib));
    }
    if (m.contains("val_loss")) {
      starts("eval", "val " + Printf("%.3f", m["val_loss"]["median"]));
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace bm::report
