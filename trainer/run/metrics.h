// Metrics of a run (docs/METRICS.md is the schema): the peak FLOP/s table,
// throughput over measured steps, and the metrics.json document.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainer/backend.h"
#include "trainer/model/config.h"
#include "trainer/run/run_config.h"

namespace bm::train {

struct PeakFlops {
  double flops_per_device = 0;
  std::string source;  // "table: H100 bf16" or "parameter peak_tflops"
};

// Dense peak FLOP/s of one device for a precision. device_name is the
// backend's (GPU name or "cpu"); platform is the probe (CPU cores, clock,
// AVX2/AVX-512). nullopt when unknown.
std::optional<PeakFlops> LookupPeakFlops(std::string_view device, std::string_view device_name,
                                         Precision precision, int threads,
                                         const nlohmann::json& platform,
                                         std::optional<double> peak_tflops);

// One log.jsonl line. A non-finite loss or gradient norm (an fp16 step that overflowed) is
// written as null and read back as NaN.
struct StepRecord {
  int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0, ms = 0;
  int64_t tokens = 0;
  std::optional<double> loss_scale;  // fp16: the loss scale this step's backward ran with
  bool skipped = false;              // fp16: the step overflowed; no optimizer update
  nlohmann::json ToJson() const;
  static StepRecord FromJson(const nlohmann::json& j);
};

struct Throughput {
  double tokens_per_s = 0;
  double step_ms_median = 0;
  int64_t measured_steps = 0;
  int64_t excluded_warmup_steps = 0;
};
// Excludes the first min(5, max(1, n/10)) steps when there are at least 2.
Throughput MeasureThroughput(const std::vector<StepRecord>& steps);

// Everything metrics.json reports about a training run.
struct TrainSummary {
  ModelConfig model;
  RunConfig run;
  std::vector<StepRecord> steps;
  MemoryStats memory;
  std::string device_name;
  double wall_s = 0;
  std::optional<int64_t> resumed_from_step;
  std::optional<double> loss_scale;  // fp16: the loss scale after the last step
  std::string started_at;            // ISO 8601 UTC
  nlohmann::json platform;
  nlohmann::json eval;  // null for training runs
};

nlohmann::json BuildMetrics(const TrainSummary& summary);

// "2026-11-21T09:00:00Z"
std::string UtcNow();

}  // namespace bm::train
