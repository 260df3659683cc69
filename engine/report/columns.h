// The columns people read, shared by the Markdown and HTML tables so both show
// the same cells: the suites' `config | parallel | fix_hp | token/p/s | loss |
// mem | MFU` (FlagPerf's 配置 read as "config": the platform; its "parallel"
// headed "layout"), after the case and the trainer that measured it, with both
// MFU definitions labelled, evaluation results, the round count and how the
// numbers were obtained. Absent values are "" (renderers print "-"). Cells
// are formatted by number_format.h alone.
//
// Thread safety: the table is built once and immutable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/report/report_table.h"

namespace bm::report {

struct DisplayColumn {
  std::string id;        // stable name, used as the HTML cell's data-col
  std::string header;    // "token/p/s"
  bool numeric = false;  // right-aligned
  std::function<std::string(const ReportRow&)> cell;
  // Shown only when a row has a value (MLPerf's time to train): a table of runs that have none
  // keeps the suites' columns alone.
  bool only_when_present = false;
};

const std::vector<DisplayColumn>& ResultColumns();
// The columns a table of `rows` shows: every column, less those only_when_present with no value.
std::vector<DisplayColumn> ShownColumns(const std::vector<ReportRow>& rows);

// One line per round: case | round | measured | host | date | trainer build | source.
const std::vector<std::string>& ProvenanceHeaders();
std::vector<std::vector<std::string>> ProvenanceCells(const ReportRow& row);

// The legend printed under the tables (units, MFU definitions, rounding), and what the optional
// columns of `shown` mean.
std::string Legend(const std::vector<DisplayColumn>& shown);

}  // namespace bm::report
