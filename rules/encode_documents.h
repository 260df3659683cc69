// EncodeDocuments: documents → token ids and loss masks, on several threads,
// with a result that does not depend on the thread count.
//
// Each segment is encoded on its own (so a prompt never merges with its
// response), segments are concatenated, and end-of-text closes the document
// (mask 1: the model learns to stop). A segment over 1 MiB is encoded with
// Encoding::EncodeParallel, so one large plain-text document still uses every
// thread. Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "rules/documents.h"
#include "rules/text/encoding.h"

namespace bm::rules {

struct EncodedDocument {
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;  // one per id: 1 trained on, 0 prompt
  uint64_t bytes = 0;         // input text bytes
};

std::vector<EncodedDocument> EncodeDocuments(const text::Encoding& encoding,
                                             const std::vector<Document>& documents, int threads);

}  // namespace bm::rules
