#include "base/formats/megatron_dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace bm::formats {
namespace {

constexpr size_t kHeaderSize = 9 + 8 + 1 + 8 + 8;

// Maps a whole file read-only. An empty file maps to nullptr with length 0.
Status MapFile(const std::string& path, void** data, size_t* len) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoStatus("cannot stat", path);
    ::close(fd);
    return s;
  }
  *len = static_cast<size_t>(st.st_size);
  *data = nullptr;
  if (*len > 0) {
    void* p = ::mmap(nullptr, *len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      Status s = ErrnoStatus("cannot mmap", path);
      ::close(fd);
      return s;
    }
    *data = p;
  }
  ::close(fd);
  return Status::Ok();
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool IsIntegerDType(DType d) {
  switch (d) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt16:
      return true;
    default:
      return false;
  }
}

// Range of token values a dtype stores (within int32).
std::pair<int64_t, int64_t> DTypeRange(DType d) {
  switch (d) {
    case DType::kUInt8:
      return {0, 255};
    case DType::kInt8:
      return {-128, 127};
    case DType::kInt16:
      return {-32768, 32767};
    case DType::kUInt16:
      return {0, 65535};
    default:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  }
}

Status SyncAndClose(std::FILE* f, const std::string& path) {
  bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    errno = saved;
    return ErrnoStatus("cannot write", path);
  }
  return Status::Ok();
}

Status SyncDirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open directory", dir);
  ::fsync(fd);  // best effort: some filesystems refuse fsync on directories
  ::close(fd);
  return Status::Ok();
}

std::FILE* OpenTemp(const std::string& final_path, std::string* tmp_path) {
  std::string templ = final_path + ".tmp.XXXXXX";
  int fd = ::mkstemp(templ.data());
  if (fd < 0) return nullptr;
  ::fchmod(fd, 0644);  // mkstemp makes 0600; datasets are meant to be shared
  *tmp_path = templ;
  std::FILE* f = ::fdopen(fd, "wb");
  if (f == nullptr) {
    ::close(fd);
    ::unlink(templ.c_str());
  }
  return f;
}

}  // namespace

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
      return 1;
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat32:
      return "float32";
    case DType::kUInt16:
      return "uint16";
  }
  return "unknown";
}

DType DTypeForVocab(size_t vocab_size) {
  return vocab_size < 65536 ? DType::kUInt16 : DType::kInt32;
}

// ---- IndexedDataset -------------------------------------------------------

IndexedDataset::IndexedDataset(IndexedDataset&& other) noexcept { *this = std::move(other); }

IndexedDataset& IndexedDataset::operator=(IndexedDataset&& other) noexcept {
  if (this != &other) {
    Release();
    idx_map_ = std::exchange(other.idx_map_, nullptr);
    idx_len_ = std::exchange(other.idx_len_, 0);
    bin_map_ = std::exchange(other.bin_map_, nullptr);
    bin_len_ = std::exchange(other.bin_len_, 0);
    dtype_ = other.dtype_;
    num_tokens_ = other.num_tokens_;
    sizes_ = std::exchange(other.sizes_, {});
    pointers_ = std::exchange(other.pointers_, {});
    doc_index_ = std::exchange(other.doc_index_, {});
  }
  return *this;
}

IndexedDataset::~IndexedDataset() { Release(); }

void IndexedDataset::Release() {
  if (idx_map_ != nullptr) ::munmap(idx_map_, idx_len_);
  if (bin_map_ != nullptr) ::munmap(bin_map_, bin_len_);
  idx_map_ = bin_map_ = nullptr;
  idx_len_ = bin_len_ = 0;
}

Result<IndexedDataset> IndexedDataset::Open(const std::string& prefix) {
  IndexedDataset ds;
  const std::string idx_path = prefix + ".idx";
  const std::string bin_path = prefix + ".bin";
  BM_TRY(MapFile(idx_path, &ds.idx_map_, &ds.idx_len_));
  BM_TRY(MapFile(bin_path, &ds.bin_map_, &ds.bin_len_));

  const auto* p = static_cast<const uint8_t*>(ds.idx_map_);
  if (ds.idx_len_ < kHeaderSize || std::memcmp(p, kIndexMagic, 9) != 0) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a Megatron index (bad magic or too short)",
                  idx_path);
  }
  const uint64_t version = Load<uint64_t>(p + 9);
  if (version != kIndexVersion) {
    return Errorf(ErrorCode::kUnsupported, "{}: index version {} (this build reads version {})",
                  idx_path, version, kIndexVersion);
  }
  ds.dtype_ = static_cast<DType>(p[17]);
  if (!IsIntegerDType(ds.dtype_)) {
    return Errorf(ErrorCode::kUnsupported, "{}: dtype code {} is not an integer token type",
                  idx_path, static_cast<int>(p[17]));
  }
  const uint64_t seq_count = Load<uint64_t>(p + 18);
  const uint64_t doc_count = Load<uint64_t>(p + 26);
  const uint64_t limit = ds.idx_len_ / 4;  // guards the size arithmetic below
  if (seq_count > limit || doc_count > limit ||
      kHeaderSize + seq_count * 12 + doc_count * 8 > ds.idx_len_) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: truncated ({} sequences, {} document entries, {} bytes)", idx_path,
                  seq_count, doc_count, ds.idx_len_);
  }
  // The arrays start at byte 34, so they are misaligned for their types: read
  // through memcpy (UnalignedArray), never through an int32_t* or int64_t*.
  const uint8_t* arrays = p + kHeaderSize;
  ds.sizes_ = {arrays, seq_count};
  ds.pointers_ = {arrays + seq_count * 4, seq_count};
  ds.doc_index_ = {arrays + seq_count * 12, doc_count};

  const size_t item = DTypeSize(ds.dtype_);
  for (size_t i = 0; i < seq_count; ++i) {
    const int64_t size = ds.sizes_[i];
    const int64_t ptr = ds.pointers_[i];
    if (size < 0 || ptr < 0 || static_cast<uint64_t>(ptr) + size * item > ds.bin_len_) {
      return Errorf(ErrorCode::kCorrupt, "{}: sequence {} (offset {}, {} tokens) lies outside {}",
                    idx_path, i, ptr, size, bin_path);
    }
    ds.num_tokens_ += static_cast<uint64_t>(size);
  }
  for (size_t d = 0; d < doc_count; ++d) {
    const int64_t v = ds.doc_index_[d];
    if (v < 0 || static_cast<uint64_t>(v) > seq_count || (d > 0 && v < ds.doc_index_[d - 1])) {
      return Errorf(ErrorCode::kCorrupt, "{}: document index entry {} = {} is out of order",
                    idx_path, d, v);
    }
  }
  return ds;
}

Status IndexedDataset::ReadTokens(size_t sequence, size_t offset, size_t count,
                                  int32_t* out) const {
  if (sequence >= sizes_.size() || offset > static_cast<size_t>(sizes_[sequence]) ||
      count > static_cast<size_t>(sizes_[sequence]) - offset) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "tokens [{}, {}) of sequence {} are outside the dataset ({} sequences)", offset,
                  offset + count, sequence, sizes_.size());
  }
  if (count == 0) return Status::Ok();  // `out` may be an empty vector's null data()
  const size_t item = DTypeSize(dtype_);
  const uint8_t* src = static_cast<const uint8_t*>(bin_map_) + pointers_[sequence] + offset * item;
  switch (dtype_) {
    case DType::kUInt8:
      for (size_t i = 0; i < count; ++i) out[i] = src[i];
      break;
    case DType::kInt8:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<int8_t>(src[i]);
      break;
    case DType::kInt16:
      for (size_t i = 0; i < count; ++i) out[i] = Load<int16_t>(src + 2 * i);
      break;
    case DType::kUInt16:
      for (size_t i = 0; i < count; ++i) out[i] = Load<uint16_t>(src + 2 * i);
      break;
    case DType::kInt32:
      std::memcpy(out, src, count * 4);
      break;
    case DType::kInt64:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(Load<int64_t>(src + 8 * i));
      break;
    default:
      return Errorf(ErrorCode::kUnsupported, "dtype {} is not a token type", DTypeName(dtype_));
  }
  return Status::Ok();
}

Result<std::vector<int32_t>> IndexedDataset::ReadSequence(size_t sequence) const {
  if (sequence >= sizes_.size()) {
    return Errorf(ErrorCode::kInvalidArgument, "sequence {} is outside the dataset ({} sequences)",
                  sequence, sizes_.size());
  }
  std::vector<int32_t> tokens(static_cast<size_t>(sizes_[sequence]));
  BM_TRY(ReadTokens(sequence, 0, tokens.size(), tokens.data()));
  return tokens;
}

// ---- IndexedDatasetWriter -------------------------------------------------

IndexedDatasetWriter::IndexedDatasetWriter(IndexedDatasetWriter&& other) noexcept {
  *this = std::move(other);
}

IndexedDatasetWriter& IndexedDatasetWriter::operator=(IndexedDatasetWriter&& other) noexcept {
  if (this != &other) {
    Abandon();
    prefix_ = std::move(other.prefix_);
    dtype_ = other.dtype_;
    bin_ = std::exchange(other.bin_, nullptr);
    bin_tmp_ = std::exchange(other.bin_tmp_, {});
    sizes_ = std::move(other.sizes_);
    doc_index_ = std::move(other.doc_index_);
    buffer_ = std::move(other.buffer_);
    num_tokens_ = other.num_tokens_;
    finished_ = std::exchange(other.finished_, true);
  }
  return *this;
}

IndexedDatasetWriter::~IndexedDatasetWriter() { Abandon(); }

void IndexedDatasetWriter::Abandon() {
  if (bin_ != nullptr) std::fclose(bin_);
  bin_ = nullptr;
  if (!finished_ && !bin_tmp_.empty()) ::unlink(bin_tmp_.c_str());
  bin_tmp_.clear();
}

Result<IndexedDatasetWriter> IndexedDatasetWriter::Create(const std::string& prefix, DType dtype) {
  if (!IsIntegerDType(dtype)) {
    return Errorf(ErrorCode::kInvalidArgument, "dtype {} cannot hold token ids", DTypeName(dtype));
  }
  IndexedDatasetWriter w;
  w.prefix_ = prefix;
  w.dtype_ = dtype;
  w.bin_ = OpenTemp(prefix + ".bin", &w.bin_tmp_);
  if (w.bin_ == nullptr) return ErrnoStatus("cannot create", prefix + ".bin");
  w.doc_index_.push_back(0);
  return w;
}

Status IndexedDatasetWriter::AddSequence(std::span<const int32_t> tokens) {
  if (bin_ == nullptr) return Errorf(ErrorCode::kInternal, "{}: writer already finished", prefix_);
  constexpr size_t kMaxSize = std::numeric_limits<int32_t>::max();  // sizes are i32
  if (tokens.size() > kMaxSize) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: a sequence of {} tokens; the index holds at most {} per sequence", prefix_,
                  tokens.size(), kMaxSize);
  }
  const auto [lo, hi] = DTypeRange(dtype_);
  const size_t item = DTypeSize(dtype_);
  buffer_.resize(tokens.size() * item);
  uint8_t* dst = buffer_.data();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t t = tokens[i];
    if (t < lo || t > hi) {
      return Errorf(ErrorCode::kInvalidArgument, "{}: token {} does not fit dtype {}", prefix_, t,
                    DTypeName(dtype_));
    }
    switch (item) {
      case 1:
        dst[i] = static_cast<uint8_t>(t);
        break;
      case 2: {
        const uint16_t v = static_cast<uint16_t>(t);
        std::memcpy(dst + 2 * i, &v, 2);
        break;
      }
      case 4:
        std::memcpy(dst + 4 * i, &t, 4);
        break;
      default: {
        const int64_t v = t;
        std::memcpy(dst + 8 * i, &v, 8);
      }
    }
  }
  if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), bin_) != buffer_.size()) {
    return ErrnoStatus("cannot write", bin_tmp_);
  }
  sizes_.push_back(static_cast<int32_t>(tokens.size()));
  num_tokens_ += tokens.size();
  return Status::Ok();
}

void IndexedDatasetWriter::EndDocument() {
  doc_index_.push_back(static_cast<int64_t>(sizes_.size()));
}

Status IndexedDatasetWriter::Finish() {
  if (bin_ == nullptr) return Errorf(ErrorCode::kInternal, "{}: writer already finished", prefix_);
  if (doc_index_.back() != static_cast<int64_t>(sizes_.size())) EndDocument();
  std::FILE* bin = std::exchange(bin_, nullptr);
  BM_TRY(SyncAndClose(bin, bin_tmp_));

  std::string idx_tmp;
  std::FILE* idx = OpenTemp(prefix_ + ".idx", &idx_tmp);
  if (idx == nullptr) return ErrnoStatus("cannot create", prefix_ + ".idx");
  std::vector<int64_t> pointers(sizes_.size());
  int64_t offset = 0;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    pointers[i] = offset;
    offset += static_cast<int64_t>(sizes_[i]) * static_cast<int64_t>(DTypeSize(dtype_));
  }
  const uint64_t version = kIndexVersion;
  const uint8_t code = static_cast<uint8_t>(dtype_);
  const uint64_t seq_count = sizes_.size();
  const uint64_t doc_count = doc_index_.size();
  // An empty vector's data() may be null, which fwrite must not be given.
  auto write_array = [idx](const auto& values) {
    return values.empty() ||
           std::fwrite(values.data(), sizeof(values[0]), values.size(), idx) == values.size();
  };
  bool ok = std::fwrite(kIndexMagic, 1, 9, idx) == 9 && std::fwrite(&version, 8, 1, idx) == 1 &&
            std::fwrite(&code, 1, 1, idx) == 1 && std::fwrite(&seq_count, 8, 1, idx) == 1 &&
            std::fwrite(&doc_count, 8, 1, idx) == 1 && write_array(sizes_) &&
            write_array(pointers) && write_array(doc_index_);
  Status st = ok ? SyncAndClose(idx, idx_tmp) : ErrnoStatus("cannot write", idx_tmp);
  if (!ok) std::fclose(idx);
  if (!st.ok()) {
    ::unlink(idx_tmp.c_str());
    return st;
  }
  // .bin first: a reader that finds the new .idx always finds its .bin.
  if (::rename(bin_tmp_.c_str(), (prefix_ + ".bin").c_str()) != 0) {
    Status s = ErrnoStatus("cannot rename into", prefix_ + ".bin");
    ::unlink(idx_tmp.c_str());
    return s;
  }
  finished_ = true;
  if (::rename(idx_tmp.c_str(), (prefix_ + ".idx").c_str()) != 0) {
    Status s = ErrnoStatus("cannot rename into", prefix_ + ".idx");
    ::unlink(idx_tmp.c_str());
    ::unlink((prefix_ + ".bin").c_str());
    return s;
  }
  return SyncDirectoryOf(prefix_ + ".idx");
}

}  // namespace bm::formats
