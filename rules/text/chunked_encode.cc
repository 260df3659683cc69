#include "rules/text/chunked_encode.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace bm::text {
namespace {

bool IsAsciiNonSpace(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

bool IsCut(std::string_view text, size_t p, CutRule rule) {
  if (p == 0 || text[p - 1] != '\n') return false;
  if (rule == CutRule::kAfterNewline) return true;
  return p >= 2 && IsAsciiNonSpace(text[p]) && IsAsciiNonSpace(text[p - 2]);
}

}  // namespace

std::vector<size_t> ChunkStarts(std::string_view text, size_t parts, size_t min_chunk,
                                CutRule rule) {
  std::vector<size_t> starts = {0};
  const size_t step = std::max<size_t>(text.size() / std::max<size_t>(parts, 1), min_chunk);
  for (size_t target = step; target < text.size(); target += step) {
    size_t p = std::max(target, starts.back() + 1);
    while (p < text.size() && !IsCut(text, p, rule)) ++p;
    if (p >= text.size()) break;
    starts.push_back(p);
    target = p;
  }
  return starts;
}

std::vector<int32_t> EncodeChunks(std::string_view text, const std::vector<size_t>& starts,
                                  int threads, const ChunkEncoder& encode) {
  std::vector<std::vector<int32_t>> chunks(starts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < starts.size();) {
      const size_t end = i + 1 < starts.size() ? starts[i + 1] : text.size();
      chunks[i].reserve((end - starts[i]) / 3);
      encode(text.substr(starts[i], end - starts[i]), starts[i], &chunks[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(starts.size())); ++t) {
    pool.emplace_back(work);
  }
  work();
  for (auto& th : pool) th.join();
  std::vector<int32_t> ids;
  size_t total = 0;
  for (const auto& c : chunks) total += c.size();
  ids.reserve(total);
  for (const auto& c : chunks) ids.insert(ids.end(), c.begin(), c.end());
  return ids;
}

std::vector<int32_t> EncodeByCuts(const Tokenizer& tokenizer, std::string_view text, int threads,
                                  CutRule rule) {
  return EncodeChunks(text, ChunkStarts(text, static_cast<size_t>(threads) * 4, 1 << 16, rule),
                      threads,
                      [&tokenizer](std::string_view chunk, size_t, std::vector<int32_t>* out) {
                        tokenizer.Encode(chunk, out);
                      });
}

}  // namespace bm::text
