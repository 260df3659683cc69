// safetensors files (Hugging Face's format), fp32 tensors.
//
//   file   := N:u64le header[N] data
//   header := JSON {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//                   "__metadata__": {"KEY": "VALUE", ...}}   (space-padded to 8 bytes)
//   data   := the tensors' bytes, little-endian, row-major; offsets relative to data
//
// The reader is strict: the header must be valid JSON of that shape, every
// tensor's byte range must equal dtype size × shape (a shape of more than 2^61
// elements, whose size would overflow, is refused), lie inside the file and
// the ranges must tile the data exactly (no gaps, no overlaps), and the file
// must not be shorter or longer than the header says. F32 is read as is, BF16
// and F16 are widened to float. Errors are kCorrupt / kUnsupported with the
// file name and what is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/real_filesystem.h"
#include "base/result.h"

namespace bm::train {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;  // numel(shape) floats
};

// A tensor to write: its name and shape, and its numel(shape) floats: at `data`, or, when
// `fill` is set, written by it into a buffer of that many (a tensor kept in another layout).
struct TensorSource {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;
  std::function<void(float* out)> fill;
};

// Writes atomically (temporary file, fsync, rename), streaming the tensors in the given
// order: beside the caller's data it holds one filled tensor at a time, never the file.
// Errors: kIo, kInvalidArgument (a tensor with neither data nor fill).
Status WriteSafetensors(const std::string& path, const std::vector<TensorSource>& tensors,
                        const std::map<std::string, std::string>& metadata);

// A safetensors file (fp32) written as its values come: the header (every tensor's name and
// shape) at Create, then the tensors' values in that order by Append, in pieces of any size.
// The file appears at Commit, whole, or not at all (a writer destroyed before Commit removes
// its temporary file).
class SafetensorsWriter {
 public:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
  };
  // Errors: kIo.
  static Result<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, const std::vector<Tensor>& tensors,
      const std::map<std::string, std::string>& metadata);
  // The next n values. kInvalidArgument past the last tensor's end; kIo.
  Status Append(const float* values, int64_t n);
  // kInvalidArgument unless every tensor's values were appended; kIo.
  Status Commit();

 private:
  explicit SafetensorsWriter(const std::string& path);
  std::unique_ptr<AtomicFileWriter> file_;
  std::string path_;
  int64_t expected_ = 0, written_ = 0;  // values
};

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  const NamedTensor* Find(const std::string& name) const;
};

// The whole file, every tensor widened to float (small files: tests, tools).
Result<SafetensorsFile> ReadSafetensors(const std::string& path);

// A safetensors file mapped read-only (its pages shared with the page cache and with every
// process that maps it), its header checked as ReadSafetensors checks it; values are read by
// range, widened to float, so a rank that keeps a slice of a 7B checkpoint touches only that
// slice's pages and never holds the file. Movable; unmaps when destroyed.
class MappedSafetensors {
 public:
  enum class Dtype { kF32, kBf16, kF16 };
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    Dtype dtype = Dtype::kF32;
    uint64_t offset = 0, bytes = 0;  // in the data section
  };

  static Result<MappedSafetensors> Open(const std::string& path);
  ~MappedSafetensors();
  MappedSafetensors(MappedSafetensors&& other) noexcept;
  MappedSafetensors& operator=(MappedSafetensors&&) = delete;
  MappedSafetensors(const MappedSafetensors&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const Tensor* Find(const std::string& name) const;
  // Element i of t (row-major), and elements [first, first + out.size()).
  float At(const Tensor& t, int64_t i) const;
  void Read(const Tensor& t, int64_t first, std::span<float> out) const;

 private:
  MappedSafetensors() = default;
  std::string path_;
  const char* base_ = nullptr;
  uint64_t size_ = 0;
  const char* data_ = nullptr;
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes `bytes` to path atomically (temporary, fsync, rename). Shared with the
// other checkpoint files.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace bm::train
