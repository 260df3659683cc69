#include "engine/report/markdown.h"

#include "engine/report/columns.h"

namespace bm::report {
namespace {

std::string Escape(const std::string& cell) {
  if (cell.empty()) return "-";
  std::string out;
  for (char c : cell) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string MarkdownTable(const std::vector<std::string>& headers,
                          const std::vector<std::vector<std::string>>& cells,
                          const std::vector<bool>& right_aligned) {
  std::string out = "|";
  for (const std::string& h : headers) out += " " + Escape(h) + " |";
  out += "\n|";
  for (size_t i = 0; i < headers.size(); ++i) {
    out += i < right_aligned.size() && right_aligned[i] ? "---:|" : "---|";
  }
  out += "\n";
  for (const std::vector<std::string>& line : cells) {
    out += "|";
    for (const std::string& c : line) out += " " + Escape(c) + " |";
    out += "\n";
  }
  return out;
}

std::string RenderMarkdown(const std::vector<ReportRow>& rows) {
  std::vector<std::string> headers;
  std::vector<bool> right;
  const std::vector<DisplayColumn> columns = ShownColumns(rows);
  for (const DisplayColumn& c : columns) {
    headers.push_back(c.header);
    right.push_back(c.numeric);
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<std::vector<std::string>> provenance;
  for (const ReportRow& row : rows) {
    std::vector<std::string> line;
    for (const DisplayColumn& c : columns) line.push_back(c.cell(row));
    cells.push_back(std::move(line));
    for (auto& p : ProvenanceCells(row)) provenance.push_back(std::move(p));
  }
  std::string out = "## Results\n\n" + MarkdownTable(headers, cells, right);
  out += "\n## Provenance\n\n" + MarkdownTable(ProvenanceHeaders(), provenance);
  out += "\n" + Legend(columns) + "\n";
  return out;
}

}  // namespace bm::report
