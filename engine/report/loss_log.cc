#include "engine/report/loss_log.h"

#include <optional>

namespace bm::report {

Result<std::vector<LossPoint>> ParseLossLog(std::string_view jsonl, std::string_view name) {
  std::vector<LossPoint> points;
  std::optional<int64_t> last_step;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < jsonl.size()) {
    size_t end = jsonl.find('\n', pos);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view line = jsonl.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: not a JSON object", name, line_no);
    }
    if (j.contains("format") && !j.contains("step")) {  // the header line
      if (j["format"] != "benchmake-log") {
        return Errorf(ErrorCode::kCorrupt, "{}:{}: format is {}, expected \"benchmake-log\"", name,
                      line_no, j["format"].dump());
      }
      if (j.value("version", 0) > kLogVersion) {
        return Errorf(ErrorCode::kUnsupported,
                      "{}:{}: log version {} is newer than this benchmake reads ({}); upgrade "
                      "benchmake",
                      name, line_no, j.value("version", 0), kLogVersion);
      }
      continue;
    }
    auto step = j.find("step");
    auto loss = j.find("loss");
    if (step == j.end() || !step->is_number_integer()) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: \"step\" missing or not an integer", name,
                    line_no);
    }
    if (loss == j.end() || !(loss->is_number() || loss->is_null())) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: \"loss\" missing or not a number", name, line_no);
    }
    LossPoint p{step->get<int64_t>(), 0};
    if (last_step && p.step <= *last_step) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: step {} does not follow step {}", name, line_no,
                    p.step, *last_step);
    }
    last_step = p.step;
    if (loss->is_null()) continue;  // a step without a loss (every micro-batch skipped)
    p.loss = loss->get<double>();
    points.push_back(p);
  }
  return points;
}

}  // namespace bm::report
