// Encoding a large text on several threads: cut it where no token can
// straddle, encode the chunks concurrently, concatenate. Each tokenizer kind
// says which cut rule is exact for it; this file only finds the cuts and runs
// the threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "rules/text/tokenizer.h"

namespace bm::text {

enum class CutRule {
  // Before a printable ASCII byte that follows a lone '\n' after a printable
  // ASCII byte ("x\n|y"): no piece of the built-in tiktoken patterns spans it,
  // and the '\n' is a piece of its own whether or not the text ends after it.
  kLoneNewline,
  // Right after any '\n' ("\n|"): exact for SentencePiece BPE models none of
  // whose pieces holds a '\n' (sentencepiece_tokenizer.cc says when).
  kAfterNewline,
};

// The starts of about `parts` chunks of at least `min_chunk` bytes (the first
// is 0), each other start a cut point of `rule`.
std::vector<size_t> ChunkStarts(std::string_view text, size_t parts, size_t min_chunk,
                                CutRule rule);

// encode(chunk, offset of the chunk in text, out) appends the chunk's ids.
using ChunkEncoder = std::function<void(std::string_view, size_t, std::vector<int32_t>*)>;

// Encodes the chunks that `starts` delimits on up to `threads` threads (the
// calling one included) and returns their ids in order.
std::vector<int32_t> EncodeChunks(std::string_view text, const std::vector<size_t>& starts,
                                  int threads, const ChunkEncoder& encode);

// tokenizer.Encode on chunks of at least 64 KiB cut by `rule`, about four per
// thread (the EncodeParallel of kinds whose chunks need nothing else).
std::vector<int32_t> EncodeByCuts(const Tokenizer& tokenizer, std::string_view text, int threads,
                                  CutRule rule);

}  // namespace bm::text
