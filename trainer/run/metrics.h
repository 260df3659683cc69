// Metrics of a run (docs/METRICS.md is the schema): throughput over measured
// steps and the metrics.json document (the peak FLOP/s table: peak_flops.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainer/backend.h"
#include "trainer/model/config.h"
#include "trainer/run/energy.h"
#include "trainer/run/peak_flops.h"
#include "trainer/run/run_config.h"

namespace bm::train {

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
// Excludes the first WarmupSteps(n) of n steps.
Throughput MeasureThroughput(const std::vector<StepRecord>& steps);
// min(5, max(1, n/10)) when n >= 2, else 0: the first steps left out of throughput.
int64_t WarmupSteps(int64_t steps);
// The first step whose energy metrics.json counts: the first measured one (after the warm-up
// of a run of `steps`) that this process ran (after `resumed_from`, 0 for a fresh run).
int64_t FirstEnergyStep(int64_t steps, int64_t resumed_from);

// Everything metrics.json reports about a training run.
struct TrainSummary {
  ModelConfig model;
  RunConfig run;
  std::vector<StepRecord> steps;
  MemoryStats memory;  // peak_bytes: the maximum over ranks
  int world_size = 1;  // ranks (= GPUs on cuda): throughput per device divides by it
  // Mean over ranks of the seconds the computation waited on data-parallel
  // communication, and the seconds this process spent in training steps.
  double comm_wait_s = 0;
  double train_s = 0;
  // Mean over ranks of the seconds spent in pipeline sends and receives.
  double pipeline_wait_s = 0;
  std::string device_name;
  double wall_s = 0;
  std::optional<int64_t> resumed_from_step;
  std::optional<double> loss_scale;  // fp16: the loss scale after the last step
  std::string started_at;            // ISO 8601 UTC
  // What the devices drew from FirstEnergyStep on; nullopt where a rank could not read its
  // device's counter.
  std::optional<RunEnergy> energy;
  nlohmann::json platform;
  nlohmann::json eval;  // null for training runs
};

nlohmann::json BuildMetrics(const TrainSummary& summary);

// "2026-11-21T09:00:00Z"
std::string UtcNow();

}  // namespace bm::train
