// The report as Markdown: the results table (columns.h), then the provenance
// of every round, then the legend. Deterministic bytes for given rows (golden
// tests: tests/data/report/golden/report.md).
//
// Cells: "-" when absent; "|" escaped as "\|"; newlines become spaces.
#pragma once

#include <string>
#include <vector>

#include "engine/report/report_table.h"

namespace bm::report {

std::string RenderMarkdown(const std::vector<ReportRow>& rows);

// One Markdown table; used by the report and by compare.
std::string MarkdownTable(const std::vector<std::string>& headers,
                          const std::vector<std::vector<std::string>>& cells,
                          const std::vector<bool>& right_aligned = {});

}  // namespace bm::report
