#include "trainer/run/energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/digest.h"

namespace bm::train {
namespace {

// A rank's part as doubles for the all-gather: measured (0 or 1), its device's name as two
// 32-bit halves of a 64-bit digest (each exact in a double), joules, seconds.
constexpr int kFields = 5;

}  // namespace

void EnergyMeter::Start() {
  if (begin_ || failed_) return;
  begin_ = read_();
  began_ = std::chrono::steady_clock::now();
  if (!begin_) failed_ = true;
}

void EnergyMeter::Stop() {
  if (!begin_) return;
  const std::optional<EnergyReading> end = read_();
  if (!end || end->device != begin_->device) {
    failed_ = true;
  } else {
    total_.device = end->device;
    total_.joules += end->joules - begin_->joules;
    total_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
    measured_ = true;
  }
  begin_.reset();
}

std::optional<RankEnergy> EnergyMeter::Total() const {
  if (failed_ || !measured_) return std::nullopt;
  return total_;
}

std::optional<RunEnergy> CombineEnergy(std::span<const std::optional<RankEnergy>> ranks) {
  RunEnergy total;
  std::vector<std::string_view> seen;
  for (const std::optional<RankEnergy>& rank : ranks) {
    if (!rank) return std::nullopt;
    total.seconds = std::max(total.seconds, rank->seconds);
    if (std::find(seen.begin(), seen.end(), rank->device) != seen.end()) continue;
    seen.push_back(rank->device);
    total.joules += rank->joules;
    ++total.devices;
  }
  if (total.devices == 0) return std::nullopt;
  return total;
}

Result<std::optional<RunEnergy>> GatherEnergy(const RunRanks& ranks,
                                              const std::optional<RankEnergy>& mine) {
  double fields[kFields] = {0, 0, 0, 0, 0};
  if (mine) {
    const Digest d = DigestOf(mine->device);
    uint32_t high = 0, low = 0;
    std::memcpy(&high, d.bytes.data(), 4);
    std::memcpy(&low, d.bytes.data() + 4, 4);
    fields[0] = 1;
    fields[1] = high;
    fields[2] = low;
    fields[3] = mine->joules;
    fields[4] = mine->seconds;
  }
  BM_ASSIGN_OR_RETURN(std::vector<double> all, ranks.Gather(fields));
  std::vector<std::optional<RankEnergy>> parts;
  for (size_t r = 0; r + kFields <= all.size(); r += kFields) {
    const double* p = all.data() + r;
    if (p[0] == 0) {
      parts.emplace_back();
    } else {
      parts.push_back(RankEnergy{
          fmt::format("{:08x}{:08x}", static_cast<uint32_t>(p[1]), static_cast<uint32_t>(p[2])),
          p[3], p[4]});
    }
  }
  return CombineEnergy(parts);
}

}  // namespace bm::train
