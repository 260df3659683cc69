// ShardPlan: how ZeRO splits a flat buffer (parameters, gradients, AdamW
// moments) among the ranks of a data-parallel group.
//
// The buffer is tiled by units (trainer/model/layout.h: the embeddings, each
// layer, the final norm and head), the granularity at which gradients are
// reduced and ZeRO-3 gathers parameters. Each unit is padded with zeros to a
// multiple of the group size R, and rank r owns the r-th of R equal slices of
// every unit:
//
//   unit u: numel n, padded p = ceil(n / R) * R, slice s = p / R
//           rank r owns unit elements [r*s, (r+1)*s) ∩ [0, n)
//   a rank's shard = its slices of all units, in unit order (Σ s floats)
//
// So a unit's reduce-scatter leaves each rank its own slice, and an
// all-gather of the slices rebuilds the padded unit. Values only.
#pragma once

#include <cstdint>
#include <vector>

namespace bm::train::dist {

struct UnitSpan {
  int64_t offset = 0;  // in the flat buffer
  int64_t numel = 0;
};

class ShardPlan {
 public:
  // Preconditions: units tile [0, total) in order; 0 <= rank < ranks.
  ShardPlan(std::vector<UnitSpan> units, int ranks, int rank);

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitSpan& unit(int u) const { return units_[u]; }

  int64_t padded(int u) const { return slice(u) * ranks_; }
  int64_t slice(int u) const { return (units_[u].numel + ranks_ - 1) / ranks_; }
  // Where unit u's slice starts in this rank's shard.
  int64_t shard_offset(int u) const { return shard_offsets_[u]; }
  int64_t shard_size() const { return shard_size_; }

  // The real (unpadded) elements of rank r's slice of unit u, as flat-buffer
  // offsets [begin, end); begin == end when the slice is all padding.
  struct Range {
    int64_t begin = 0, end = 0;
    int64_t size() const { return end - begin; }
  };
  Range Owned(int u, int r) const;
  Range Owned(int u) const { return Owned(u, rank_); }
  // ZeRO-3's units that stay gathered from their forward to their backward (zero3_keep_params):
  // the last units of the buffer (the forward's last, the backward's first), taken from the end
  // while their parameters add up to at most `params`; never unit 0 (the embeddings, which a
  // tied head reads beside the others). The first of them; num_units() when none.
  int FirstKeptUnit(int64_t params) const;

 private:
  std::vector<UnitSpan> units_;
  int ranks_, rank_;
  std::vector<int64_t> shard_offsets_;
  int64_t shard_size_ = 0;
};

}  // namespace bm::train::dist
