#include "tests/engine/report/fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "engine/report/loss_log.h"
#include "engine/report/run_files.h"

namespace bm::report::testing {

std::string DataDir() {
  const char* src = std::getenv("BENCHMAKE_SOURCE_DIR");
  return std::string(src ? src : BENCHMAKE_TEST_SOURCE_DIR) + "/tests/data/report";
}

Measurement LoadRun(const std::string& name) {
  Result<Measurement> m = LoadRunFiles(DataDir() + "/runs/" + name);
  if (!m.ok()) {
    ADD_FAILURE() << m.status().message();
    return {};
  }
  return *m;
}

std::vector<MeasuredTarget> LoadFixtureSet() {
  Result<std::string> text = ReadWholeFile(DataDir() + "/set.json");
  if (!text.ok()) {
    ADD_FAILURE() << text.status().message();
    return {};
  }
  nlohmann::json set = nlohmann::json::parse(*text);
  std::vector<MeasuredTarget> out;
  for (const nlohmann::json& t : set) {
    MeasuredTarget target;
    target.target = t["target"];
    target.rule = t["rule"];
    for (const nlohmann::json& j : t["measurements"]) {
      Measurement m;
      Result<std::string> metrics =
          ReadWholeFile(DataDir() + "/" + j["metrics"].get<std::string>());
      if (!metrics.ok()) {
        ADD_FAILURE() << metrics.status().message();
        return {};
      }
      m.metrics = nlohmann::json::parse(*metrics);
      if (j.contains("log")) {
        std::string path = DataDir() + "/" + j["log"].get<std::string>();
        Result<std::string> log = ReadWholeFile(path);
        Result<std::vector<LossPoint>> points =
            log.ok() ? ParseLossLog(*log, path) : Result<std::vector<LossPoint>>(log.status());
        if (!points.ok()) {
          ADD_FAILURE() << points.status().message();
          return {};
        }
        m.losses = *points;
      }
      std::string origin = j["origin"];
      m.provenance.origin = origin == "fresh"   ? Origin::kFresh
                            : origin == "cache" ? Origin::kRestored
                                                : Origin::kFile;
      m.provenance.source = j["source"];
      FillProvenanceFromMetrics(m);
      target.measurements.push_back(std::move(m));
    }
    out.push_back(std::move(target));
  }
  return out;
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = DataDir() + "/golden/" + name;
  const char* update = std::getenv("BENCHMAKE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  Result<std::string> expected = ReadWholeFile(path);
  ASSERT_TRUE(expected.ok()) << expected.status().message()
                             << " (run with BENCHMAKE_UPDATE_GOLDEN=1 to create it)";
  if (*expected == actual) return;
  // Show the first differing line, not two walls of text.
  size_t line = 1, pos = 0;
  while (pos < expected->size() && pos < actual.size() && (*expected)[pos] == actual[pos]) {
    if (actual[pos++] == '\n') ++line;
  }
  size_t start = expected->rfind('\n', pos == 0 ? 0 : pos - 1);
  start = start == std::string::npos ? 0 : start + 1;
  auto line_at = [start](const std::string& s) {
    return start >= s.size() ? std::string("(end of file)")
                             : s.substr(start, s.find('\n', start) - start);
  };
  ADD_FAILURE() << "golden file " << path << " differs at line " << line
                << ":\n  expected: " << line_at(*expected) << "\n  actual:   " << line_at(actual)
                << "\n(BENCHMAKE_UPDATE_GOLDEN=1 rewrites it; review the diff)";
}

}  // namespace bm::report::testing
