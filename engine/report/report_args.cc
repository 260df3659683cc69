#include "engine/report/report_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engine/report/csv.h"
#include "engine/report/html.h"
#include "engine/report/json_report.h"
#include "engine/report/markdown.h"
#include "engine/report/report_table.h"

namespace bm::report {
namespace {

Result<Format> ParseFormat(const std::string& value, const char* usage) {
  if (value == "md" || value == "markdown") return Format::kMarkdown;
  if (value == "json") return Format::kJson;
  if (value == "csv") return Format::kCsv;
  if (value == "html") return Format::kHtml;
  return Errorf(ErrorCode::kInvalidArgument, "unknown format '{}' (md, json, csv, html)\n{}", value,
                usage);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format FormatFromExtension(const std::string& path) {
  if (EndsWith(path, ".json")) return Format::kJson;
  if (EndsWith(path, ".csv")) return Format::kCsv;
  if (EndsWith(path, ".html") || EndsWith(path, ".htm")) return Format::kHtml;
  return Format::kMarkdown;
}

// Walks args; for each flag calls on_flag(flag, value-or-null). Returns the positionals.
struct Flags {
  std::vector<std::string> positional;
  std::string format, output, from_step, tolerance, worst;
  bool no_alignment = false;
};

Result<Flags> Split(const std::vector<std::string>& args, bool compare, const char* usage) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string* slot = nullptr;
    if (a == "--format") slot = &f.format;
    if (a == "-o" || a == "--output") slot = &f.output;
    if (compare && a == "--from-step") slot = &f.from_step;
    if (compare && a == "--tolerance") slot = &f.tolerance;
    if (compare && a == "--worst") slot = &f.worst;
    if (slot != nullptr) {
      if (i + 1 >= args.size()) {
        return Errorf(ErrorCode::kInvalidArgument, "{} needs a value\n{}", a, usage);
      }
      *slot = args[++i];
    } else if (compare && a == "--no-alignment") {
      f.no_alignment = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return Errorf(ErrorCode::kInvalidArgument, "unknown option '{}'\n{}", a, usage);
    } else {
      f.positional.push_back(a);
    }
  }
  return f;
}

Result<int64_t> ParseInt(const std::string& flag, const std::string& v, int64_t min) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min) {
    return Errorf(ErrorCode::kInvalidArgument, "{} wants an integer >= {}, not '{}'", flag, min, v);
  }
  return out;
}

}  // namespace

bool IsPathSelector(const std::string& s) {
  return s.find('/') != std::string::npos || EndsWith(s, ".json");
}

Result<ReportArgs> ParseReportArgs(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(Flags f, Split(args, false, kReportUsage));
  ReportArgs r;
  r.selectors = f.positional;
  r.output = f.output;
  if (!f.format.empty()) {
    BM_ASSIGN_OR_RETURN(r.format, ParseFormat(f.format, kReportUsage));
  } else {
    r.format = FormatFromExtension(f.output);
  }
  return r;
}

Result<CompareArgs> ParseCompareArgs(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(Flags f, Split(args, true, kCompareUsage));
  if (f.positional.size() != 2) {
    return Errorf(ErrorCode::kInvalidArgument, "compare needs two targets or runs, got {}\n{}",
                  f.positional.size(), kCompareUsage);
  }
  CompareArgs c;
  c.a = f.positional[0];
  c.b = f.positional[1];
  c.output = f.output;
  c.check_alignment = !f.no_alignment;
  std::string format = f.format.empty() ? (EndsWith(f.output, ".json") ? "json" : "md") : f.format;
  BM_ASSIGN_OR_RETURN(c.format, ParseFormat(format, kCompareUsage));
  if (c.format != Format::kMarkdown && c.format != Format::kJson) {
    return Errorf(ErrorCode::kInvalidArgument, "compare writes md or json, not '{}'\n{}", format,
                  kCompareUsage);
  }
  if (!f.from_step.empty()) {
    BM_ASSIGN_OR_RETURN(c.alignment.from_step, ParseInt("--from-step", f.from_step, 0));
  }
  if (!f.worst.empty()) {
    BM_ASSIGN_OR_RETURN(int64_t worst, ParseInt("--worst", f.worst, 0));
    c.alignment.worst = static_cast<int>(std::min<int64_t>(worst, 1000000));
  }
  if (!f.tolerance.empty()) {
    std::string t = f.tolerance;
    if (!t.empty() && t.back() == '%') t.pop_back();
    double pct = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), pct);
    if (ec != std::errc() || p != t.data() + t.size() || !(pct > 0) || !std::isfinite(pct)) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "--tolerance wants a positive percentage such as 2 or 2%, not '{}'",
                    f.tolerance);
    }
    c.alignment.tolerance = pct / 100;
  }
  return c;
}

std::string RenderReport(Format format, const std::vector<MeasuredTarget>& targets) {
  switch (format) {
    case Format::kJson:
      return RenderJson(BuildRows(targets));
    case Format::kCsv:
      return RenderCsv(BuildRows(targets));
    case Format::kHtml:
      return RenderHtml(targets);
    case Format::kMarkdown:
      break;
  }
  return RenderMarkdown(BuildRows(targets));
}

}  // namespace bm::report
