// safetensors files (Hugging Face's format), fp32 tensors.
//
//   file   := N:u64le header[N] data
//   header := JSON {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//                   "__metadata__": {"KEY": "VALUE", ...}}   (space-padded to 8 bytes)
//   data   := the tensors' bytes, little-endian, row-major; offsets relative to data
//
// The reader is strict: the header must be valid JSON of that shape, every
// tensor's byte range must equal dtype size × shape, lie inside the file and
// the ranges must tile the data exactly (no gaps, no overlaps), and the file
// must not be shorter or longer than the header says. F32 is read as is, BF16
// and F16 are widened to float. Errors are kCorrupt / kUnsupported with the
// file name and what is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

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

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  const NamedTensor* Find(const std::string& name) const;
};

Result<SafetensorsFile> ReadSafetensors(const std::string& path);

// Writes `bytes` to path atomically (temporary, fsync, rename). Shared with the
// other checkpoint files.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace bm::train
