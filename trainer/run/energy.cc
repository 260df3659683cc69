#include "trainer/run/energy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/digest.h"

namespace bm::train {
namespace {

// A rank's part as doubles for the all-gather: read (0 or 1), the device's name as two 32-bit
// halves of a 64-bit digest (each exact in a double), joules, seconds.
constexpr int kFields = 5;

std::string DeviceKey(double high, double low) {
  return std::to_string(static_cast<uint64_t>(high)) + ":" +
         std::to_string(static_cast<uint64_t>(low));
}

}  // namespace

std::optional<RunEnergy> CombineEnergy(std::span<const std::optional<RankEnergy>> ranks) {
  RunEnergy total;
  std::vector<std::string_view> seen;
  for (const std::optional<RankEnergy>& rank : ranks) {
    if (!rank) return std::nullopt;
    total.seconds = std::max(total.seconds, rank->seconds);
    bool counted = false;
    for (std::string_view d : seen) counted = counted || d == rank->device;
    if (counted) continue;
    seen.push_back(rank->device);
    total.joules += rank->joules;
    ++total.devices;
  }
  if (total.devices == 0) return std::nullopt;
  return total;
}

Result<std::optional<RunEnergy>> GatherEnergy(const RunRanks& ranks,
                                              const std::optional<EnergyReading>& before,
                                              const std::optional<EnergyReading>& after,
                                              double seconds) {
  double mine[kFields] = {0, 0, 0, 0, 0};
  if (before && after && before->device == after->device) {
    const Digest d = DigestOf(after->device);
    uint32_t high = 0, low = 0;
    std::memcpy(&high, d.bytes.data(), 4);
    std::memcpy(&low, d.bytes.data() + 4, 4);
    mine[0] = 1;
    mine[1] = high;
    mine[2] = low;
    mine[3] = after->joules - before->joules;
    mine[4] = seconds;
  }
  BM_ASSIGN_OR_RETURN(std::vector<double> all, ranks.Gather(mine));
  std::vector<std::optional<RankEnergy>> parts;
  for (size_t r = 0; r + kFields <= all.size(); r += kFields) {
    const double* p = all.data() + r;
    if (p[0] == 0) {
      parts.emplace_back();
    } else {
      parts.push_back(RankEnergy{DeviceKey(p[1], p[2]), p[3], p[4]});
    }
  }
  return CombineEnergy(parts);
}

}  // namespace bm::train
