// The report as one self-contained HTML file: inline CSS and SVG, no scripts,
// no fonts, no network. Sections, in order:
//   - "Loss": the loss curves of every target with a log.jsonl, overlaid
//     (<svg id="loss-chart">), with a linear/log switch made of two radio
//     inputs (#y-lin, #y-log) and CSS — it works with scripts disabled;
//   - "Throughput": token/p/s bars grouped by platform (<svg id="tokens-chart">);
//   - "MFU": both definitions per target, grouped by platform (<svg id="mfu-chart">);
//   - "Results" and "Provenance": the tables of markdown.h (<table id="results">,
//     <table id="provenance">), each cell <td data-col="ID"> (columns.h ids);
//     rows with a restored measurement have class "restored";
//   - the legend, and the report's JSON (json_report.h) in
//     <script type="application/json" id="report-data"> for programs.
// A target's color is the same in every chart. Deterministic bytes.
#pragma once

#include <string>
#include <vector>

#include "engine/report/measurement.h"

namespace bm::report {

std::string RenderHtml(const std::vector<MeasuredTarget>& targets,
                       const std::string& title = "benchmake report");

}  // namespace bm::report
