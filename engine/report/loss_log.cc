#include "engine/report/loss_log.h"

#include <optional>

#include "base/formats/json_text.h"

namespace bm::report {

Result<std::vector<LossPoint>> ParseLossLog(std::string_view jsonl, std::string_view name) {
  std::vector<LossPoint> points;
  int64_t last_step = 0;  // steps with a null loss count for the order too
  bool any_step = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < jsonl.size()) {
    size_t end = jsonl.find('\n', pos);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view line = jsonl.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    BM_ASSIGN_OR_RETURN(nlohmann::json j,
                        formats::ParseJsonText(line, name, static_cast<int>(line_no)));
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
    const int64_t s = step->get<int64_t>();
    if (any_step && s <= last_step) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: step {} does not follow step {}", name, line_no, s,
                    last_step);
    }
    any_step = true;
    last_step = s;
    if (loss->is_number()) points.push_back(LossPoint{s, loss->get<double>()});
  }
  return points;
}

}  // namespace bm::report
