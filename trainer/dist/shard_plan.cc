#include "trainer/dist/shard_plan.h"

#include <algorithm>

namespace bm::train::dist {

ShardPlan::ShardPlan(std::vector<UnitSpan> units, int ranks, int rank)
    : units_(std::move(units)), ranks_(ranks), rank_(rank) {
  shard_offsets_.reserve(units_.size());
  for (int u = 0; u < num_units(); ++u) {
    shard_offsets_.push_back(shard_size_);
    shard_size_ += slice(u);
  }
}

ShardPlan::Range ShardPlan::Owned(int u, int r) const {
  const int64_t s = slice(u), n = units_[u].numel;
  const int64_t begin = std::min<int64_t>(r * s, n), end = std::min<int64_t>((r + 1) * s, n);
  return {units_[u].offset + begin, units_[u].offset + end};
}

int ShardPlan::FirstKeptUnit(int64_t params) const {
  int first = num_units();
  for (int64_t kept = 0; first > 1 && kept + units_[first - 1].numel <= params; --first)
    kept += units_[first - 1].numel;
  return first;
}

}  // namespace bm::train::dist
