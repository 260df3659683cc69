// Megatron-LM indexed dataset (.bin + .idx): the tokenized-data format read by
// Megatron-LM, FlagScale and NeMo (megatron/core/datasets/indexed_dataset.py).
//
// PREFIX.bin: the tokens of every sequence, back to back, in the dataset's
// dtype, little-endian, no header.
// PREFIX.idx, little-endian:
//   idx      := magic version dtype seq_count doc_count sizes pointers doc_index
//   magic    := "MMIDIDX\x00\x00"          9 bytes
//   version  := u64 = 1                    (other versions are refused)
//   dtype    := u8 (DType code below)
//   seq_count:= u64                        number of sequences
//   doc_count:= u64                        entries of doc_index (documents + 1)
//   sizes    := i32[seq_count]             tokens per sequence
//   pointers := i64[seq_count]             byte offset of each sequence in .bin
//   doc_index:= i64[doc_count]             0, then the sequence count at the end
//                                          of each document (as Megatron's writer)
//
// IndexedDataset maps both files read-only (mmap); it is movable, not
// copyable, and safe to read from several threads at once.
// IndexedDatasetWriter streams tokens into a temporary .bin; Finish() writes
// the .idx, fsyncs both and renames them into place (the .bin first, then the
// .idx), so a reader never sees a partial dataset. A writer destroyed without
// a successful Finish() removes its temporary files. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "base/formats/unaligned_array.h"
#include "base/result.h"

namespace bm::formats {

// Megatron's DType codes (indexed_dataset.py); do not renumber.
enum class DType : uint8_t {
  kUInt8 = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat64 = 6,
  kFloat32 = 7,
  kUInt16 = 8,
};

// Bytes per element; 0 for a code that is not a DType.
size_t DTypeSize(DType dtype);
std::string_view DTypeName(DType dtype);
// uint16 for a vocabulary below 65536 ids, else int32. (Megatron's DType.optimal_dtype
// switches to int32 at 65500 already; its reader takes either, by the dtype code.)
DType DTypeForVocab(size_t vocab_size);

inline constexpr char kIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIndexVersion = 1;

class IndexedDataset {
 public:
  // Opens PREFIX.bin and PREFIX.idx. Errors: kNotFound (a file is missing),
  // kCorrupt (bad magic, truncated index, pointers or sizes outside .bin,
  // doc_index not increasing), kUnsupported (another version, a float dtype).
  static Result<IndexedDataset> Open(const std::string& prefix);

  IndexedDataset(IndexedDataset&& other) noexcept;
  IndexedDataset& operator=(IndexedDataset&& other) noexcept;
  IndexedDataset(const IndexedDataset&) = delete;
  IndexedDataset& operator=(const IndexedDataset&) = delete;
  ~IndexedDataset();

  DType dtype() const { return dtype_; }
  size_t num_sequences() const { return sizes_.size(); }
  size_t num_documents() const { return doc_index_.empty() ? 0 : doc_index_.size() - 1; }
  uint64_t num_tokens() const { return num_tokens_; }
  // The .idx arrays, read in place (they need not be aligned: UnalignedArray).
  UnalignedArray<int32_t> sizes() const { return sizes_; }
  UnalignedArray<int64_t> pointers() const { return pointers_; }
  // The raw doc_index: num_documents() + 1 entries, starting at 0; document d
  // spans sequences [document_index()[d], document_index()[d + 1]).
  UnalignedArray<int64_t> document_index() const { return doc_index_; }

  // Copies tokens [offset, offset + count) of a sequence into out, converted
  // to int32. Errors: kInvalidArgument when the range is outside the sequence.
  Status ReadTokens(size_t sequence, size_t offset, size_t count, int32_t* out) const;
  // The whole sequence, converted to int32.
  Result<std::vector<int32_t>> ReadSequence(size_t sequence) const;

 private:
  IndexedDataset() = default;
  void Release();

  void* idx_map_ = nullptr;
  size_t idx_len_ = 0;
  void* bin_map_ = nullptr;
  size_t bin_len_ = 0;
  DType dtype_ = DType::kInt32;
  uint64_t num_tokens_ = 0;
  UnalignedArray<int32_t> sizes_;
  UnalignedArray<int64_t> pointers_;
  UnalignedArray<int64_t> doc_index_;
};

class IndexedDatasetWriter {
 public:
  // Starts PREFIX.bin/.idx (written under temporary names until Finish()).
  // Errors: kIo (the directory is not writable), kInvalidArgument (float dtype).
  static Result<IndexedDatasetWriter> Create(const std::string& prefix, DType dtype);

  IndexedDatasetWriter(IndexedDatasetWriter&& other) noexcept;
  IndexedDatasetWriter& operator=(IndexedDatasetWriter&& other) noexcept;
  IndexedDatasetWriter(const IndexedDatasetWriter&) = delete;
  IndexedDatasetWriter& operator=(const IndexedDatasetWriter&) = delete;
  ~IndexedDatasetWriter();  // without Finish(): removes the temporary files

  // Appends one sequence. Errors: kInvalidArgument when a token does not fit
  // the dtype (e.g. 70000 in uint16, -1 in uint8) or the sequence has more than
  // 2^31 - 1 tokens (sizes are i32), kIo on a write error.
  Status AddSequence(std::span<const int32_t> tokens);
  // Closes the current document (the sequences added since the last call).
  void EndDocument();
  // Writes the index and publishes both files atomically. Sequences added
  // after the last EndDocument() are closed into a final document.
  Status Finish();

  size_t num_sequences() const { return sizes_.size(); }
  uint64_t num_tokens() const { return num_tokens_; }

 private:
  IndexedDatasetWriter() = default;
  void Abandon();

  std::string prefix_;
  DType dtype_ = DType::kInt32;
  std::FILE* bin_ = nullptr;
  std::string bin_tmp_;
  std::vector<int32_t> sizes_;
  std::vector<int64_t> doc_index_;
  std::vector<uint8_t> buffer_;
  uint64_t num_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace bm::formats
