#include "engine/report/run_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/formats/json_text.h"
#include "engine/report/loss_log.h"
#include "engine/report/metrics_view.h"
#include "engine/report/report_table.h"

namespace bm::report {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return Errorf(code, "{}: {}", path, std::strerror(errno));
  }
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Errorf(ErrorCode::kIo, "{}: read failed", path);
  return s.str();
}

Status CheckMetricsFormat(const nlohmann::json& metrics, const std::string& name) {
  if (!metrics.is_object()) return Errorf(ErrorCode::kCorrupt, "{}: not a JSON object", name);
  auto format = metrics.find("format");
  if (format != metrics.end() && *format != "benchmake-metrics") {
    return Errorf(ErrorCode::kCorrupt, "{}: format is {}, expected \"benchmake-metrics\"", name,
                  format->dump());
  }
  // The numbers the tables read (a row's figures, and DeviceCount's terms): one of another type
  // would read as absent (metrics_view.h) and print "-" for a figure the file does state.
  auto check = [&](std::string_view path) -> Status {
    const nlohmann::json* v = ValueAt(metrics, path);
    if (v != nullptr && !v->is_null() && !v->is_number())
      return Errorf(ErrorCode::kCorrupt, "{}: {} is {}, not a number", name, path, v->dump());
    return Status::Ok();
  };
  for (const RowFigure& f : RowFigures()) BM_TRY(check(f.path));
  for (std::string_view path : {"config.devices", "config.tp", "config.pp", "config.dp"})
    BM_TRY(check(path));
  auto version = metrics.find("version");
  if (version != metrics.end() && version->is_number_integer() &&
      version->get<int64_t>() > kMetricsVersion) {
    return Errorf(ErrorCode::kUnsupported,
                  "{}: metrics version {} is newer than this benchmake reads ({}); upgrade "
                  "benchmake",
                  name, version->get<int64_t>(), kMetricsVersion);
  }
  return Status::Ok();
}

Result<Measurement> LoadRunFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path metrics_path = path;
  if (fs::is_directory(metrics_path, ec)) metrics_path /= "metrics.json";
  BM_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(metrics_path.string()));
  Measurement m;
  BM_ASSIGN_OR_RETURN(m.metrics, formats::ParseJsonText(text, metrics_path.string()));
  BM_TRY(CheckMetricsFormat(m.metrics, metrics_path.string()));
  fs::path log_path = metrics_path.parent_path() / "log.jsonl";
  if (fs::exists(log_path, ec)) {
    BM_ASSIGN_OR_RETURN(std::string log, ReadWholeFile(log_path.string()));
    BM_ASSIGN_OR_RETURN(m.losses, ParseLossLog(log, log_path.string()));
  }
  m.provenance.origin = Origin::kFile;
  m.provenance.source = path;
  FillProvenanceFromMetrics(m);
  return m;
}

}  // namespace bm::report
