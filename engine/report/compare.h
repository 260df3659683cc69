// `benchmake compare A B`: how B's measurements differ from A's (A is the
// reference), what differs in their configuration, and whether B's loss curve
// is aligned with A's (loss_alignment.h).
//
// Metric values are medians over each side's rounds (report_table.h). The loss
// curves are each side's newest measurement that has one. Differences list the
// leaves of metrics.json's "config" and "model" objects that differ, plus the
// platform (device × count, driver, CUDA, trainer build), so a failed alignment
// comes with its likely cause: a changed hyper-parameter, or only the platform.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/report/loss_alignment.h"
#include "engine/report/measurement.h"
#include "engine/report/number_format.h"

namespace bm::report {

struct MetricDelta {
  std::string name;  // "token/p/s", "MFU (6N)", ...
  std::string id;    // "tokens_per_device_per_s", for JSON
  Quantity quantity = Quantity::kTokensPerS;
  std::optional<double> a;
  std::optional<double> b;
};

struct Difference {
  std::string field;  // "config.lr", "platform"
  std::string a;      // "0.0003"; "(absent)" when missing on that side
  std::string b;
  bool platform = false;  // a platform fact rather than a setting of the run
};

struct Comparison {
  std::string a_label;
  std::string b_label;
  std::vector<MetricDelta> metrics;
  std::vector<Difference> differences;
  std::optional<Alignment> alignment;  // nullopt: not checked, see alignment_note
  std::string alignment_note;          // why not checked ("B has no loss curve")
  // Two runs read by MLPerf's time to train have no loss curve: what MLPerf checks of a run
  // instead, that its evaluations reached the benchmark's quality target (eval.quality.reached),
  // decides. nullopt where the loss curves were compared or a side does not say.
  struct QualityCheck {
    bool pass = false;
    std::string verdict;
  };
  std::optional<QualityCheck> quality;

  bool aligned() const { return alignment ? alignment->pass : quality && quality->pass; }
  // One sentence: why the alignment failed (or that it passed).
  std::string Verdict() const;
};

// Precondition: both targets have at least one measurement.
Comparison Compare(const MeasuredTarget& a, const MeasuredTarget& b,
                   const AlignmentOptions& options = {});

// Human-readable: metric table with deltas, differences, alignment and its
// worst steps. Deterministic (golden tests).
std::string RenderComparisonMarkdown(const Comparison& c);
std::string RenderComparisonJson(const Comparison& c);

}  // namespace bm::report
