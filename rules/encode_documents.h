// EncodeDocuments: documents → token ids and loss masks, on several threads,
// with a result that does not depend on the thread count.
//
// Each segment is encoded on its own (so a prompt never merges with its
// response), segments are concatenated, and the tokenizer's end-of-text
// (eos_id) closes the document (mask 1: the model learns to stop). When the
// tokenizer adds BOS (LLaMA's convention, Tokenizer::adds_bos) the document
// opens with bos_id (mask 0: nothing predicts it). A segment over 1 MiB is
// encoded with Tokenizer::EncodeParallel, so one large plain-text document
// still uses every thread. Precondition: tokenizer.eos_id() has a value.
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "rules/documents.h"
#include "rules/text/tokenizer.h"

namespace bm::rules {

struct EncodedDocument {
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;  // one per id: 1 trained on, 0 prompt
  uint64_t bytes = 0;         // input text bytes
};

std::vector<EncodedDocument> EncodeDocuments(const text::Tokenizer& tokenizer,
                                             const std::vector<Document>& documents, int threads);

}  // namespace bm::rules
