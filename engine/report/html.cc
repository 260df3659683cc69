#include "engine/report/html.h"

#include <fmt/format.h>

#include <map>

#include "engine/report/chart_scale.h"
#include "engine/report/columns.h"
#include "engine/report/json_report.h"
#include "engine/report/report_table.h"
#include "engine/report/svg_chart.h"

namespace bm::report {
namespace {

constexpr const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.restored td { background: #fff8e6; }
.badge { font-size: 11px; padding: 0 4px; border-radius: 3px; background: #e6a700; color: #fff; }
.legend-text { color: #555; max-width: 900px; }
svg.chart { display: block; margin: 6px 0 12px; }
svg .title { font-size: 14px; font-weight: 600; }
svg .tick, svg .value, svg .group, svg .legend text { font-size: 11px; fill: #333; }
svg .label { font-size: 12px; fill: #333; }
svg .grid { stroke: #e5e5e5; } svg .axis { stroke: #444; }
svg .whisker { stroke: #222; stroke-width: 1.2; fill: none; }
svg .empty { font-size: 14px; fill: #888; }
.switch label { margin-right: 12px; cursor: pointer; }
#y-log:checked ~ svg .y-lin { display: none; }
#y-lin:checked ~ svg .y-log { display: none; }
)css";

std::string Table(const std::string& id, const std::vector<std::string>& ids,
                  const std::vector<std::string>& headers, const std::vector<bool>& numeric,
                  const std::vector<std::vector<std::string>>& cells,
                  const std::vector<bool>& restored) {
  std::string out = fmt::format("<table id=\"{}\">\n<thead><tr>", id);
  for (const std::string& h : headers) out += "<th>" + XmlEscape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < cells.size(); ++r) {
    out += restored[r] ? "<tr class=\"restored\">" : "<tr>";
    for (size_t i = 0; i < cells[r].size(); ++i) {
      const std::string& c = cells[r][i];
      out += fmt::format("<td data-col=\"{}\"{}>{}</td>", XmlEscape(ids[i]),
                         numeric[i] ? " class=\"num\"" : "", c.empty() ? "-" : XmlEscape(c));
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

// JSON inside <script>: "</" must not close the element.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

}  // namespace

std::string RenderHtml(const std::vector<MeasuredTarget>& targets, const std::string& title) {
  std::vector<ReportRow> rows = BuildRows(targets);
  std::map<std::string, std::string> color;
  for (size_t i = 0; i < rows.size(); ++i) color[rows[i].target] = PaletteColor(i);

  LineChart loss;
  loss.id = "loss-chart";
  loss.title = "Training loss";
  loss.x_label = "step";
  loss.y_label = "loss";
  for (const MeasuredTarget& t : targets) {
    const Measurement* m = nullptr;
    for (const Measurement& x : t.measurements) {
      if (!x.losses.empty()) m = &x;
    }
    if (m == nullptr) continue;
    Series s{t.target, color[t.target], {}};
    for (const LossPoint& p : m->losses) s.points.emplace_back(static_cast<double>(p.step), p.loss);
    loss.series.push_back(std::move(s));
  }

  BarChart tokens;
  tokens.id = "tokens-chart";
  tokens.title = "token/p/s by platform";
  tokens.y_label = "tokens / device / s";
  tokens.quantity = Quantity::kTokensPerS;
  BarChart mfu;
  mfu.id = "mfu-chart";
  mfu.title = "MFU by platform (solid: 6N, light: PaLM)";
  mfu.y_label = "MFU (%)";
  mfu.quantity = Quantity::kMfu;
  BarChart energy;  // GPU runs only (metrics.json's energy): drawn when one has it
  energy.id = "energy-chart";
  energy.title = "Energy per token by platform";
  energy.y_label = "mJ / token";
  energy.quantity = Quantity::kJoulesPerToken;
  std::map<std::string, size_t> group_of;  // platform -> index, in first-seen order
  std::vector<std::pair<std::string, std::string>> legend;
  for (const ReportRow& r : rows) {
    if (!r.tokens_per_device_per_s && !r.mfu_6n && !r.mfu_palm) continue;
    std::string platform = PlatformText(r);
    if (!group_of.count(platform)) {
      group_of[platform] = tokens.groups.size();
      for (BarChart* chart : {&tokens, &mfu, &energy}) chart->groups.push_back({platform, {}});
    }
    size_t g = group_of[platform];
    const std::string& c = color[r.target];
    legend.emplace_back(c, r.target);
    if (r.tokens_per_device_per_s) {
      tokens.groups[g].bars.push_back({r.target, c, *r.tokens_per_device_per_s});
    }
    if (r.mfu_6n) mfu.groups[g].bars.push_back({r.target + " (6N)", c, *r.mfu_6n, 1.0});
    if (r.mfu_palm) mfu.groups[g].bars.push_back({r.target + " (PaLM)", c, *r.mfu_palm, 0.45});
    if (r.joules_per_token) {
      energy.groups[g].bars.push_back({r.target, c, *r.joules_per_token});
      energy.legend.emplace_back(c, r.target);  // the GPU runs only
    }
  }
  auto drop_empty = [](BarChart& chart) {
    std::erase_if(chart.groups, [](const BarGroup& g) { return g.bars.empty(); });
  };
  for (BarChart* chart : {&tokens, &mfu, &energy}) drop_empty(*chart);
  tokens.legend = legend;
  mfu.legend = legend;
  mfu.legend_opacity = {{1.0, "6N (FlagPerf)"}, {0.45, "PaLM (with attention)"}};

  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
      XmlEscape(title), kStyle, XmlEscape(title));
  out +=
      "<h2>Loss</h2>\n<div class=\"switch\">\n"
      "<input type=\"radio\" name=\"yscale\" id=\"y-lin\" checked>"
      "<label for=\"y-lin\">linear</label>\n"
      "<input type=\"radio\" name=\"yscale\" id=\"y-log\"><label for=\"y-log\">log</label>\n";
  out += RenderLineChart(loss) + "</div>\n";
  out += "<h2>Throughput</h2>\n" + RenderBarChart(tokens);
  out += "<h2>MFU</h2>\n" + RenderBarChart(mfu);
  if (!energy.groups.empty()) out += "<h2>Energy</h2>\n" + RenderBarChart(energy);

  std::vector<std::string> ids, headers;
  std::vector<bool> numeric, restored;
  const std::vector<DisplayColumn> columns = ShownColumns(rows);
  for (const DisplayColumn& c : columns) {
    ids.push_back(c.id);
    headers.push_back(c.header);
    numeric.push_back(c.numeric);
  }
  std::vector<std::vector<std::string>> cells;
  for (const ReportRow& r : rows) {
    std::vector<std::string> line;
    for (const DisplayColumn& c : columns) line.push_back(c.cell(r));
    cells.push_back(std::move(line));
    restored.push_back(r.restored > 0);
  }
  out += "<h2>Results</h2>\n" + Table("results", ids, headers, numeric, cells, restored);

  std::vector<std::vector<std::string>> prov;
  std::vector<bool> prov_restored;
  for (const ReportRow& r : rows) {
    for (auto& line : ProvenanceCells(r)) {
      prov_restored.push_back(line[2] == OriginName(Origin::kRestored));
      prov.push_back(std::move(line));
    }
  }
  std::vector<std::string> prov_ids = {"case", "round", "measured", "host",
                                       "date", "build", "source"};
  out += "<h2>Provenance</h2>\n" + Table("provenance", prov_ids, ProvenanceHeaders(),
                                         std::vector<bool>(prov_ids.size(), false), prov,
                                         prov_restored);
  out += "<p class=\"legend-text\">" + XmlEscape(Legend(columns)) + "</p>\n";
  out += "<script type=\"application/json\" id=\"report-data\">\n" +
         ScriptSafe(ReportJson(rows).dump(1)) + "\n</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace bm::report
