#include "rules/encode_documents.h"

#include <atomic>
#include <thread>

namespace bm::rules {
namespace {

constexpr size_t kLargeSegment = 1 << 20;

void EncodeOne(const text::Tokenizer& tokenizer, const Document& doc, int threads,
               EncodedDocument* out) {
  if (tokenizer.adds_bos()) {
    out->ids.push_back(*tokenizer.bos_id());
    out->mask.push_back(0);
  }
  for (const Segment& s : doc.segments) {
    if (s.text.size() > kLargeSegment && threads > 1) {
      std::vector<int32_t> ids = tokenizer.EncodeParallel(s.text, threads);
      out->ids.insert(out->ids.end(), ids.begin(), ids.end());
    } else {
      tokenizer.Encode(s.text, &out->ids);
    }
    out->mask.resize(out->ids.size(), s.trained ? 1 : 0);
    out->bytes += s.text.size();
  }
  out->ids.push_back(*tokenizer.eos_id());
  out->mask.push_back(1);
}

bool IsLarge(const Document& doc) {
  for (const Segment& s : doc.segments) {
    if (s.text.size() > kLargeSegment) return true;
  }
  return false;
}

}  // namespace

std::vector<EncodedDocument> EncodeDocuments(const text::Tokenizer& tokenizer,
                                             const std::vector<Document>& documents, int threads) {
  std::vector<EncodedDocument> out(documents.size());
  // Large documents first, each with every thread; then the rest, one
  // document per task, claimed in blocks from a shared counter.
  for (size_t i = 0; i < documents.size(); ++i) {
    if (IsLarge(documents[i])) EncodeOne(tokenizer, documents[i], threads, &out[i]);
  }
  constexpr size_t kBlock = 8;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t start; (start = next.fetch_add(kBlock)) < documents.size();) {
      const size_t end = std::min(start + kBlock, documents.size());
      for (size_t i = start; i < end; ++i) {
        if (!IsLarge(documents[i])) EncodeOne(tokenizer, documents[i], 1, &out[i]);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return out;
}

}  // namespace bm::rules
