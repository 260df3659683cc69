#include "engine/report/columns.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/report/number_format.h"

namespace bm::report {
namespace {

std::function<std::string(const ReportRow&)> StatCell(std::optional<Stat> ReportRow::*field,
                                                      Quantity q) {
  return [field, q](const ReportRow& row) {
    const std::optional<Stat>& s = row.*field;
    return s ? FormatStat(q, *s) : std::string();
  };
}

}  // namespace

const std::vector<DisplayColumn>& ResultColumns() {
  static const std::vector<DisplayColumn> kColumns = {
      {"case", "case", false, [](const ReportRow& r) { return r.target; }},
      {"trainer", "trainer", false, [](const ReportRow& r) { return r.trainer; }},
      {"config", "config", false, PlatformText},
      {"parallel", "layout", false, [](const ReportRow& r) { return r.parallel; }},
      {"fix_hp", "fix_hp", false, [](const ReportRow& r) { return r.fix_hp; }},
      {"tokens", "token/p/s", true,
       StatCell(&ReportRow::tokens_per_device_per_s, Quantity::kTokensPerS)},
      {"loss", "loss", true, StatCell(&ReportRow::loss, Quantity::kLoss)},
      {"mem", "mem (GiB)", true, MemText},
      {"mfu_6n", "MFU (6N)", true, StatCell(&ReportRow::mfu_6n, Quantity::kMfu)},
      {"mfu_palm", "MFU (PaLM)", true, StatCell(&ReportRow::mfu_palm, Quantity::kMfu)},
      {"eval", "eval", false, EvalText},
      {"time_to_train", "time to train (min)", true, TimeToTrainText, true},
      {"rounds", "rounds", true, [](const ReportRow& r) { return fmt::format("{}", r.rounds()); }},
      {"measured", "measured", false, OriginText},
  };
  return kColumns;
}

std::vector<DisplayColumn> ShownColumns(const std::vector<ReportRow>& rows) {
  std::vector<DisplayColumn> shown;
  for (const DisplayColumn& c : ResultColumns()) {
    if (!c.only_when_present || std::any_of(rows.begin(), rows.end(),
                                            [&](const ReportRow& r) { return !c.cell(r).empty(); }))
      shown.push_back(c);
  }
  return shown;
}

const std::vector<std::string>& ProvenanceHeaders() {
  static const std::vector<std::string> kHeaders = {"case", "round",         "measured", "host",
                                                    "date", "trainer build", "source"};
  return kHeaders;
}

std::vector<std::vector<std::string>> ProvenanceCells(const ReportRow& row) {
  std::vector<std::vector<std::string>> lines;
  int round = 0;
  for (const Provenance& p : row.provenance) {
    ++round;
    lines.push_back({row.target, fmt::format("{}", round), std::string(OriginName(p.origin)),
                     p.host, p.measured_at, p.trainer_build, p.source});
  }
  return lines;
}

std::string Legend(const std::vector<DisplayColumn>& shown) {
  static const std::string kLegend =
      "trainer: what measured the run (benchmake-train, or the external trainer whose log was "
      "parsed). layout: TPxPPyDPz. fix_hp: MPE (sequence length), LBS (micro-batch), GAS when "
      "not 1. token/p/s: tokens per device per second, timed after the warm-up steps. "
      "MFU (6N): 6·N FLOPs per token (FlagPerf); MFU (PaLM): 6·N + 12·L·H·Q·T (PaLM, "
      "appendix B); both against the device's peak FLOP/s. mem: peak device memory / device "
      "total, GiB (host: a CPU run's memory / the machine's RAM). loss: final training loss (mean "
      "of the last steps). Over several rounds: "
      "median (min–max). measured: fresh = measured by this build; cache = an earlier "
      "measurement restored from the cache; file = read from a metrics.json. Rounding: "
      "docs/REPORTS.md.";
  const bool time_to_train = std::any_of(
      shown.begin(), shown.end(), [](const DisplayColumn& c) { return c.id == "time_to_train"; });
  if (!time_to_train) return kLegend;
  return kLegend +
         " time to train: MLPerf's, run_start to run_stop of a run that reached its quality "
         "target, in minutes; over three or more runs MLPerf's score, the mean less the fastest "
         "and the slowest (four each for U-Net3D; a run that did not converge counts as one of "
         "the slowest), with the converged runs' range and the runs counted (of the number "
         "MLPerf asks for the benchmark).";
}

}  // namespace bm::report
