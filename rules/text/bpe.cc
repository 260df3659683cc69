#include "rules/text/bpe.h"

#include <queue>

namespace bm::text {
namespace {

constexpr uint32_t kNone = RankMap::kNotFound;

struct Part {
  uint32_t start;
  uint32_t rank;  // rank of this part merged with the next one, or kNone
};

}  // namespace

void BytePairEncode(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out) {
  if (piece.size() == 1) {
    out->push_back(static_cast<int32_t>(ranks.Find(piece)));
    return;
  }
  const uint32_t whole = ranks.Find(piece);
  if (whole != kNone) {
    out->push_back(static_cast<int32_t>(whole));
    return;
  }
  if (piece.size() <= kLinearMaxBytes) {
    BytePairEncodeLinear(piece, ranks, out);
  } else {
    BytePairEncodeHeap(piece, ranks, out);
  }
}

// tiktoken's byte_pair_merge: parts[i].rank caches the rank of parts i and
// i+1 merged; after a merge only the two neighbouring entries change.
void BytePairEncodeLinear(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out) {
  const size_t n = piece.size();
  Part stack_parts[kLinearMaxBytes + 1];
  std::vector<Part> heap_parts;
  Part* parts = stack_parts;
  if (n > kLinearMaxBytes) {
    heap_parts.resize(n + 1);
    parts = heap_parts.data();
  }
  size_t count = n + 1;  // the last part is a sentinel at position n
  for (size_t i = 0; i < n; ++i) {
    parts[i].start = static_cast<uint32_t>(i);
    parts[i].rank = i + 2 <= n ? ranks.Find(piece.substr(i, 2)) : kNone;
  }
  parts[n] = {static_cast<uint32_t>(n), kNone};
  auto pair_rank = [&](size_t i) -> uint32_t {
    if (i + 2 >= count) return kNone;
    return ranks.Find(piece.substr(parts[i].start, parts[i + 2].start - parts[i].start));
  };
  while (count > 2) {
    uint32_t best = kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < count; ++i) {
      if (parts[i].rank < best) {
        best = parts[i].rank;
        at = i;
      }
    }
    if (best == kNone) break;
    // Merge part at+1 into at.
    for (size_t j = at + 1; j + 1 < count; ++j) parts[j] = parts[j + 1];
    --count;
    parts[at].rank = pair_rank(at);
    if (at > 0) parts[at - 1].rank = pair_rank(at - 1);
  }
  for (size_t i = 0; i + 1 < count; ++i) {
    out->push_back(static_cast<int32_t>(
        ranks.Find(piece.substr(parts[i].start, parts[i + 1].start - parts[i].start))));
  }
}

// The same merge order with a min-heap of candidate pairs keyed by (rank,
// start) and a doubly linked list of parts. A popped candidate is stale when
// either side was merged since: it is checked against the current ends.
void BytePairEncodeHeap(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out) {
  const uint32_t n = static_cast<uint32_t>(piece.size());
  std::vector<uint32_t> next(n), prev(n);  // by part start; next == n: last part
  std::vector<bool> alive(n, true);
  for (uint32_t i = 0; i < n; ++i) {
    next[i] = i + 1;
    prev[i] = i == 0 ? n : i - 1;
  }
  struct Candidate {
    uint32_t rank, start, end;  // end: one past the right part
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : start > o.start;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](uint32_t left) {
    const uint32_t right = next[left];
    if (right >= n) return;
    const uint32_t end = next[right];
    const uint32_t r = ranks.Find(piece.substr(left, end - left));
    if (r != kNone) heap.push({r, left, end});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.start] || next[c.start] >= n || next[next[c.start]] != c.end) continue;
    const uint32_t right = next[c.start];
    alive[right] = false;
    next[c.start] = c.end;
    if (c.end < n) prev[c.end] = c.start;
    push(c.start);
    if (prev[c.start] < n) push(prev[c.start]);
  }
  for (uint32_t i = 0; i < n; i = next[i]) {
    out->push_back(static_cast<int32_t>(ranks.Find(piece.substr(i, next[i] - i))));
  }
}

}  // namespace bm::text
