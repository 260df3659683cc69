#include "base/formats/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/real_filesystem.h"

namespace bm::formats {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

Status Corrupt(std::string_view origin, std::string_view what) {
  return Errorf(ErrorCode::kCorrupt, "{}: not a valid .npy file ({})", origin, what);
}

// The value of 'key' in the header dict, up to the next ',' at depth 0 or '}'.
std::string HeaderValue(std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  size_t p = header.find(quoted);
  if (p == std::string_view::npos) return "";
  p = header.find(':', p + quoted.size());
  if (p == std::string_view::npos) return "";
  ++p;
  int depth = 0;
  size_t q = p;
  for (; q < header.size(); ++q) {
    const char c = header[q];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v(header.substr(p, q - p));
  v.erase(0, v.find_first_not_of(" "));
  v.erase(v.find_last_not_of(" ") + 1);
  return v;
}

}  // namespace

uint64_t NpyArray::size() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

size_t NpyArray::item_size() const {
  if (descr.size() < 3) return 0;
  return static_cast<size_t>(std::atoi(descr.c_str() + 2));
}

Result<std::vector<int64_t>> NpyArray::ToInt64() const {
  const size_t n = size();
  std::vector<int64_t> out(n);
  const char* p = data.data();
  auto load = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = static_cast<int64_t>(v);
    }
  };
  const std::string_view t = std::string_view(descr).substr(1);
  if (t == "u1")
    load(uint8_t{});
  else if (t == "i1")
    load(int8_t{});
  else if (t == "u2")
    load(uint16_t{});
  else if (t == "i2")
    load(int16_t{});
  else if (t == "u4")
    load(uint32_t{});
  else if (t == "i4")
    load(int32_t{});
  else if (t == "u8")
    load(uint64_t{});
  else if (t == "i8")
    load(int64_t{});
  else
    return Errorf(ErrorCode::kUnsupported, "dtype {} is not an integer type", descr);
  return out;
}

NpyArray NpyArray::FromInt32(const std::vector<int32_t>& values) {
  return {"<i4",
          {values.size()},
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4)};
}
NpyArray NpyArray::FromInt64(const std::vector<int64_t>& values) {
  return {"<i8",
          {values.size()},
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8)};
}
NpyArray NpyArray::FromUInt16(const std::vector<uint16_t>& values) {
  return {"<u2",
          {values.size()},
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * 2)};
}

Result<NpyArray> ParseNpy(std::string_view bytes, std::string_view origin) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6)) {
    return Corrupt(origin, "bad magic");
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Corrupt(origin, "short header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    header_start = 12;
  } else {
    return Errorf(ErrorCode::kUnsupported, "{}: .npy format version {} (this build reads 1 to 3)",
                  origin, major);
  }
  if (header_start + header_len > bytes.size()) return Corrupt(origin, "header past the end");
  const std::string_view header = bytes.substr(header_start, header_len);
  NpyArray a;
  a.descr = HeaderValue(header, "descr");
  if (a.descr.size() < 4 || (a.descr.front() != '\'' && a.descr.front() != '"')) {
    return Corrupt(origin, "no descr");
  }
  a.descr = a.descr.substr(1, a.descr.size() - 2);
  if (a.descr[0] == '>') {
    return Errorf(ErrorCode::kUnsupported, "{}: big-endian dtype {}", origin, a.descr);
  }
  if (HeaderValue(header, "fortran_order") != "False") {
    return Errorf(ErrorCode::kUnsupported, "{}: Fortran-ordered arrays are not supported", origin);
  }
  std::string shape = HeaderValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    return Corrupt(origin, "bad shape");
  }
  std::istringstream dims(shape.substr(1, shape.size() - 2));
  for (std::string d; std::getline(dims, d, ',');) {
    d.erase(0, d.find_first_not_of(" "));
    d.erase(d.find_last_not_of(" ") + 1);
    if (d.empty()) continue;
    if (d.find_first_not_of("0123456789L") != std::string::npos)
      return Corrupt(origin, "bad shape");
    a.shape.push_back(std::stoull(d));
  }
  const size_t item = a.item_size();
  if (item == 0) return Corrupt(origin, "bad descr " + a.descr);
  const size_t start = header_start + header_len;
  if (bytes.size() - start != a.size() * item) {
    return Corrupt(origin, fmt::format("{} data bytes for {} elements of {} bytes",
                                       bytes.size() - start, a.size(), item));
  }
  a.data.assign(bytes.substr(start));
  BM_TRY(a.ToInt64().status().WithContext(origin));  // integer dtypes only
  return a;
}

std::string SerializeNpy(const NpyArray& array) {
  // Python's tuple repr: (), (n,), (a, b)
  std::string shape = array.shape.size() == 1 ? fmt::format("({},)", array.shape[0])
                                              : fmt::format("({})", fmt::join(array.shape, ", "));
  std::string header =
      "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out += array.data;
  return out;
}

Result<NpyArray> ReadNpy(const std::string& path) {
  BM_ASSIGN_OR_RETURN(std::string bytes, DiskFilesystem().ReadFile(path));
  return ParseNpy(bytes, path);
}

Status WriteNpy(const std::string& path, const NpyArray& array) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string bytes = SerializeNpy(array);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Errorf(ErrorCode::kIo, "cannot write {}", path);
  return Status::Ok();
}

}  // namespace bm::formats
