// NumPy arrays on disk: .npy (one array) and .npz (a zip of .npy files, as
// np.savez writes it), for the ecosystem's pretokenized data — PaddleNLP's
// PREFIX_ids.npy + PREFIX_idx.npz and plain .npy id arrays.
//
// .npy, format versions 1.0, 2.0 and 3.0:
//   npy    := "\x93NUMPY" major:u8 minor:u8 header_len header data
//   header_len := u16 (1.0) | u32 (2.0, 3.0), little-endian
//   header := a Python dict literal, e.g.
//             {'descr': '<i4', 'fortran_order': False, 'shape': (1000,), }
//             padded with spaces and a final '\n'
//   data   := the elements in C order
// Supported: little-endian or byte-order-free integer dtypes (|u1 |i1 <u2 <i2
// <u4 <i4 <u8 <i8), C order, any shape (callers here use 1-D arrays).
// .npz: a zip archive of NAME.npy entries, read and written through libarchive
// (stored or deflated entries read; written stored, like np.savez).
//
// Whole arrays are read into memory. Thread safety: values only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::formats {

struct NpyArray {
  std::string descr;            // "<i4", "|u1", ...
  std::vector<uint64_t> shape;  // (N,) → {N}
  std::string data;             // raw little-endian elements

  uint64_t size() const;     // product of shape (1 for a scalar)
  size_t item_size() const;  // bytes per element, from descr

  // Elements converted to int64. Errors: kUnsupported for a non-integer dtype.
  Result<std::vector<int64_t>> ToInt64() const;

  static NpyArray FromInt32(const std::vector<int32_t>& values);
  static NpyArray FromInt64(const std::vector<int64_t>& values);
  static NpyArray FromUInt16(const std::vector<uint16_t>& values);
};

// Errors: kCorrupt (bad magic, header or length), kUnsupported (big-endian,
// Fortran order, non-integer dtype, unknown version).
Result<NpyArray> ParseNpy(std::string_view bytes, std::string_view origin);
std::string SerializeNpy(const NpyArray& array);  // version 1.0

Result<NpyArray> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const NpyArray& array);

// Entries by name without ".npy" ({"lens": ..., "docs": ...}).
Result<std::map<std::string, NpyArray>> ReadNpz(const std::string& path);
Status WriteNpz(const std::string& path, const std::map<std::string, NpyArray>& arrays);

}  // namespace bm::formats
