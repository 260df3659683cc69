#include "trainer/checkpoint/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "base/real_filesystem.h"

namespace bm::train {
namespace {

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float Bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float F16ToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    f = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    f = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -f : f;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  return DiskFilesystem().WriteFileAtomic(path, bytes);
}

Result<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errorf(ErrorCode::kNotFound, "cannot open {}", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

SafetensorsWriter::SafetensorsWriter(const std::string& path)
    : file_(std::make_unique<AtomicFileWriter>(path)), path_(path) {}

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, const std::vector<Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter(path));
  for (const Tensor& t : tensors) {
    const int64_t bytes = Numel(t.shape) * 4;
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {w->expected_ * 4, w->expected_ * 4 + bytes}}};
    w->expected_ += Numel(t.shape);
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  char size[8];
  for (int i = 0; i < 8; ++i) size[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  BM_TRY(w->file_->Open());
  BM_TRY(w->file_->Write(size, 8));
  BM_TRY(w->file_->Write(json.data(), json.size()));
  return w;
}

Status SafetensorsWriter::Append(const float* values, int64_t n) {
  if (n > expected_ - written_)
    return Errorf(ErrorCode::kInvalidArgument, "{}: {} values past the last tensor's end", path_,
                  n - (expected_ - written_));
  BM_TRY(file_->Write(values, static_cast<size_t>(n) * 4));  // little-endian host
  written_ += n;
  return Status::Ok();
}

Status SafetensorsWriter::Commit() {
  if (written_ != expected_)
    return Errorf(ErrorCode::kInvalidArgument, "{}: {} of the tensors' {} values written", path_,
                  written_, expected_);
  return file_->Commit();
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorSource>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsWriter::Tensor> specs;
  int64_t widest_fill = 0;
  for (const TensorSource& t : tensors) {
    if (!t.data && !t.fill)
      return Errorf(ErrorCode::kInvalidArgument, "tensor {}: neither data nor a fill", t.name);
    specs.push_back({t.name, t.shape});
    if (t.fill) widest_fill = std::max(widest_fill, Numel(t.shape));
  }
  BM_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> file,
                      SafetensorsWriter::Create(path, specs, metadata));
  std::vector<float> filled(static_cast<size_t>(widest_fill));
  for (const TensorSource& t : tensors) {
    const float* data = t.data;
    if (t.fill) {
      t.fill(filled.data());
      data = filled.data();
    }
    BM_TRY(file->Append(data, Numel(t.shape)));
  }
  return file->Commit();
}

const NamedTensor* SafetensorsFile::Find(const std::string& name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

MappedSafetensors::~MappedSafetensors() {
  if (base_) ::munmap(const_cast<char*>(base_), size_);
}

MappedSafetensors::MappedSafetensors(MappedSafetensors&& o) noexcept
    : path_(std::move(o.path_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      data_(std::exchange(o.data_, nullptr)),
      tensors_(std::move(o.tensors_)),
      metadata_(std::move(o.metadata_)) {}

Result<MappedSafetensors> MappedSafetensors::Open(const std::string& path) {
  MappedSafetensors f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errorf(ErrorCode::kNotFound, "cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Errorf(ErrorCode::kIo, "cannot stat {}: {}", path, std::strerror(errno));
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  auto corrupt = [&](const std::string& what) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a valid safetensors file: {}", path, what);
  };
  if (f.size_ < 8) {
    ::close(fd);
    return corrupt(fmt::format("{} bytes, shorter than the 8-byte header size", f.size_));
  }
  void* base = ::mmap(nullptr, f.size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED)
    return Errorf(ErrorCode::kIo, "cannot map {}: {}", path, std::strerror(errno));
  f.base_ = static_cast<const char*>(base);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(f.base_[i]);
  if (n > f.size_ - 8)
    return corrupt(fmt::format("header of {} bytes but the file has {} (truncated?)", n, f.size_));
  nlohmann::json header = nlohmann::json::parse(f.base_ + 8, f.base_ + 8 + n, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return corrupt("the header is not a JSON object");
  const uint64_t data_size = f.size_ - 8 - n;
  f.data_ = f.base_ + 8 + n;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return corrupt("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return corrupt("__metadata__." + k + " is not a string");
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
        !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      return corrupt("tensor " + name + " lacks dtype, shape or data_offsets");
    Tensor t;
    t.name = name;
    // numel × 4 bytes must fit 63 bits: a wrapped product could match small offsets (the
    // safetensors crate refuses it too, as ValidationOverflow).
    uint64_t numel = 1;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return corrupt("tensor " + name + " has a bad shape");
      const auto dim = static_cast<uint64_t>(d.get<int64_t>());
      if (dim != 0 && numel > (uint64_t{1} << 61) / dim)
        return corrupt(fmt::format("tensor {} has shape {}, too large to be held", name,
                                   entry["shape"].dump()));
      numel *= dim;
      t.shape.push_back(d.get<int64_t>());
    }
    const std::string dtype = entry["dtype"];
    if (dtype != "F32" && dtype != "BF16" && dtype != "F16")
      return Errorf(ErrorCode::kUnsupported, "{}: tensor {} has dtype {} (F32, BF16, F16 are read)",
                    path, name, dtype);
    t.dtype = dtype == "F32" ? Dtype::kF32 : dtype == "BF16" ? Dtype::kBf16 : Dtype::kF16;
    const uint64_t elem = t.dtype == Dtype::kF32 ? 4 : 2;
    const auto& off = entry["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return corrupt("tensor " + name + " has bad data_offsets");
    const uint64_t begin = off[0], end = off[1];
    if (end < begin || end - begin != numel * elem)
      return corrupt(fmt::format("tensor {} spans {} bytes but shape {} of {} needs {}", name,
                                 end - begin, nlohmann::json(t.shape).dump(), dtype, numel * elem));
    if (end > data_size)
      return corrupt(fmt::format("tensor {} ends at byte {} of a {}-byte data section (truncated?)",
                                 name, end, data_size));
    t.offset = begin;
    t.bytes = end - begin;
    f.tensors_.push_back(std::move(t));
  }
  // data order; the tensors must tile the data section exactly
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const Tensor& a, const Tensor& b) { return a.offset < b.offset; });
  uint64_t pos = 0;
  for (const Tensor& t : f.tensors_) {
    if (t.offset != pos)
      return corrupt(fmt::format("tensor {} leaves a gap or overlaps at byte {}", t.name, pos));
    pos = t.offset + t.bytes;
  }
  if (pos != data_size)
    return corrupt(fmt::format("{} bytes after the last tensor", data_size - pos));
  return f;
}

const MappedSafetensors::Tensor* MappedSafetensors::Find(const std::string& name) const {
  for (const Tensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

float MappedSafetensors::At(const Tensor& t, int64_t i) const {
  const char* p = data_ + t.offset;
  if (t.dtype == Dtype::kF32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t.dtype == Dtype::kBf16 ? Bf16ToFloat(h) : F16ToFloat(h);
}

void MappedSafetensors::Read(const Tensor& t, int64_t first, std::span<float> out) const {
  if (t.dtype == Dtype::kF32) {
    std::memcpy(out.data(), data_ + t.offset + 4 * first, out.size() * 4);
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = At(t, first + static_cast<int64_t>(i));
}

Result<SafetensorsFile> ReadSafetensors(const std::string& path) {
  BM_ASSIGN_OR_RETURN(MappedSafetensors mapped, MappedSafetensors::Open(path));
  SafetensorsFile file;
  file.metadata = mapped.metadata();
  for (const MappedSafetensors::Tensor& t : mapped.tensors()) {
    NamedTensor n{t.name, t.shape, std::vector<float>(static_cast<size_t>(Numel(t.shape)))};
    mapped.Read(t, 0, n.data);
    file.tensors.push_back(std::move(n));
  }
  return file;
}

}  // namespace bm::train
