// The energy a run's training steps took on its devices, for metrics.json's "energy"
// (docs/METRICS.md): each rank reads its device's counter (Backend::ReadEnergy) before its first
// step and after its last, and the run adds the differences over distinct devices, so that
// ranks sharing one GPU count it once. Megatron-LM's energy monitor reads the same NVML counter,
// summed over its ranks.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/run/run_ranks.h"

namespace bm::train {

struct RunEnergy {
  double joules = 0;   // summed over the distinct devices
  int devices = 0;     // how many
  double seconds = 0;  // the longest rank's window
};

// One rank's part: its device and what the counter moved over its window.
struct RankEnergy {
  std::string device;
  double joules = 0, seconds = 0;
};

// nullopt when any rank has no reading: a sum that leaves a device out would read as true.
// A device's energy is taken from the first rank naming it.
std::optional<RunEnergy> CombineEnergy(std::span<const std::optional<RankEnergy>> ranks);

// Collective over the world: every rank passes its readings before and after its steps and the
// seconds between them; every rank gets the same result.
Result<std::optional<RunEnergy>> GatherEnergy(const RunRanks& ranks,
                                              const std::optional<EnergyReading>& before,
                                              const std::optional<EnergyReading>& after,
                                              double seconds);

}  // namespace bm::train
