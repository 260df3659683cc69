// A log of the corpus (tests/data/logs/) read as an exec target would read
// it: through its parser, then BuildExternalMetrics with exec's parameters.
// Shared by the corpus test and the per-format tests.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rules/exec.h"
#include "rules/external_metrics.h"
#include "rules/logparse/log_parser.h"
#include "tests/support/rule_params.h"
#include "tests/support/test_data.h"

namespace bm::rules::testing_logs {

// exec's parameters with their defaults, `command` set, then `overrides`.
inline nlohmann::json Params(nlohmann::json overrides) {
  if (!overrides.contains("command")) overrides["command"] = nlohmann::json::array({"true"});
  return testing::WithDefaults(*MakeExecRule(), std::move(overrides));
}

// Whether one of `notes` contains `part`.
inline bool HasNote(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

struct Read {
  logparse::ParsedLog log;
  ExternalMetrics ext;
  const nlohmann::json& m() const { return ext.metrics; }
  const logparse::Iteration* At(int64_t step) const {
    for (const logparse::Iteration& it : log.iterations)
      if (it.step == step) return &it;
    return nullptr;
  }
  std::optional<double> Loss(int64_t step) const {
    const logparse::Iteration* it = At(step);
    return it ? it->loss : std::nullopt;
  }
  std::vector<int64_t> Steps() const {
    std::vector<int64_t> s;
    for (const logparse::Iteration& it : log.iterations) s.push_back(it.step);
    return s;
  }
  double PerDevice() const { return m()["throughput"]["tokens_per_device_per_s"].get<double>(); }
  bool Note(const std::string& part) const { return HasNote(ext.notes, part); }
};

// tests/data/logs/FILE read as `format` with exec's parameters `params`.
inline Result<Read> ReadLog(const std::string& file, const std::string& format,
                            nlohmann::json params = {}) {
  const logparse::LogParser* parser = logparse::FindLogParser(format);
  if (!parser) return Errorf(ErrorCode::kInvalidArgument, "no parser {}", format);
  Read r;
  BM_ASSIGN_OR_RETURN(r.log, parser->parse(testing::ReadTestData("logs/" + file), file));
  params["log_format"] = format;
  BM_ASSIGN_OR_RETURN(r.ext, BuildExternalMetrics(*parser, r.log, file, Params(params), {}));
  return r;
}

}  // namespace bm::rules::testing_logs
