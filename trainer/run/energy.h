// The energy a run's training steps took on its devices, for metrics.json's "energy"
// (docs/METRICS.md). Each rank's EnergyMeter reads its device's counter (Backend::ReadEnergy)
// around the stretches of steps it measures, leaving out what lies between them (a resume
// checkpoint being written); GatherEnergy adds the ranks' energy over distinct devices, so that
// ranks sharing one GPU count it once. Megatron-LM's energy monitor reads the same NVML counter,
// summed over its ranks.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/run/run_ranks.h"

namespace bm::train {

// One rank's part: its device and what the counter moved over the measured stretches.
struct RankEnergy {
  std::string device;
  double joules = 0, seconds = 0;
};

class EnergyMeter {
 public:
  using Read = std::function<std::optional<EnergyReading>()>;  // Backend::ReadEnergy
  explicit EnergyMeter(Read read) : read_(std::move(read)) {}
  // A stretch begins (once the device's queued work has run); no-op while one runs.
  void Start();
  // The stretch ends and is added; no-op when none runs.
  void Stop();
  // nullopt when nothing was measured, or a reading failed (no counter).
  std::optional<RankEnergy> Total() const;

 private:
  Read read_;
  std::optional<EnergyReading> begin_;
  std::chrono::steady_clock::time_point began_;
  RankEnergy total_;
  bool measured_ = false, failed_ = false;
};

struct RunEnergy {
  double joules = 0;   // summed over the distinct devices
  int devices = 0;     // how many
  double seconds = 0;  // the longest rank's
};

// nullopt when any rank has no energy: a sum that leaves a device out would read as true.
// A device's energy is taken from the first rank naming it.
std::optional<RunEnergy> CombineEnergy(std::span<const std::optional<RankEnergy>> ranks);

// Collective over the world: every rank passes its own; every rank gets the same result.
Result<std::optional<RunEnergy>> GatherEnergy(const RunRanks& ranks,
                                              const std::optional<RankEnergy>& mine);

}  // namespace bm::train
