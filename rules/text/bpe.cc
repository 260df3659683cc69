#include "rules/text/bpe.h"

#include <cstring>
#include <queue>

namespace bm::text {
namespace {

constexpr uint32_t kNone = RankMap::kNotFound;

struct Part {
  uint32_t start;
  uint32_t rank;  // rank of this part merged with the next one, or kNone
};

// The rank of merging parts [a, b) and [b, c) of the piece.
struct TiktokenRanker {
  std::string_view piece;
  const RankMap& ranks;
  uint32_t operator()(uint32_t a, uint32_t /*b*/, uint32_t c) const {
    return ranks.Find(piece.substr(a, c - a));
  }
};

struct PairRanker {
  std::string_view piece;
  const RankMap& tokens;
  const PairMerges& merges;
  uint32_t operator()(uint32_t a, uint32_t b, uint32_t c) const {
    const uint32_t left = tokens.Find(piece.substr(a, b - a));
    const uint32_t right = tokens.Find(piece.substr(b, c - b));
    if (left == kNone || right == kNone) return kNone;
    return merges.Rank(static_cast<int32_t>(left), static_cast<int32_t>(right));
  }
};

// tiktoken's byte_pair_merge: parts[i].rank caches the rank of parts i and
// i+1 merged; after a merge only the two neighbouring entries change.
// `tokens` names the final parts.
template <typename Ranker>
void MergeLinear(std::string_view piece, const RankMap& tokens, const Ranker& rank,
                 std::vector<int32_t>* out) {
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
    parts[i].rank = i + 2 <= n ? rank(i, i + 1, i + 2) : kNone;
  }
  parts[n] = {static_cast<uint32_t>(n), kNone};
  auto pair_rank = [&](size_t i) -> uint32_t {
    if (i + 2 >= count) return kNone;
    return rank(parts[i].start, parts[i + 1].start, parts[i + 2].start);
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
        tokens.Find(piece.substr(parts[i].start, parts[i + 1].start - parts[i].start))));
  }
}

// The same merge order with a min-heap of candidate pairs keyed by (rank,
// start) and a doubly linked list of parts. A popped candidate is stale when
// either side was merged since: it is checked against the current ends.
template <typename Ranker>
void MergeHeap(std::string_view piece, const RankMap& tokens, const Ranker& rank,
               std::vector<int32_t>* out) {
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
    const uint32_t r = rank(left, right, end);
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
    out->push_back(static_cast<int32_t>(tokens.Find(piece.substr(i, next[i] - i))));
  }
}

std::string_view PairKey(int32_t left, int32_t right, char (&buf)[8]) {
  std::memcpy(buf, &left, 4);
  std::memcpy(buf + 4, &right, 4);
  return std::string_view(buf, 8);
}

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

void BytePairEncodeLinear(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out) {
  MergeLinear(piece, ranks, TiktokenRanker{piece, ranks}, out);
}

void BytePairEncodeHeap(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out) {
  MergeHeap(piece, ranks, TiktokenRanker{piece, ranks}, out);
}

bool PairMerges::Add(int32_t left, int32_t right, uint32_t rank) {
  char buf[8];
  const std::string_view key = PairKey(left, right, buf);
  if (rules_.Find(key) != kNone) return false;
  rules_.Insert(key, rank);
  return true;
}

uint32_t PairMerges::Rank(int32_t left, int32_t right) const {
  char buf[8];
  return rules_.Find(PairKey(left, right, buf));
}

void PairMerges::Encode(std::string_view piece, const RankMap& tokens,
                        std::vector<int32_t>* out) const {
  if (piece.size() == 1) {
    out->push_back(static_cast<int32_t>(tokens.Find(piece)));
    return;
  }
  const PairRanker ranker{piece, tokens, *this};
  if (piece.size() <= kLinearMaxBytes) {
    MergeLinear(piece, tokens, ranker, out);
  } else {
    MergeHeap(piece, tokens, ranker, out);
  }
}

}  // namespace bm::text
