#include "base/formats/megatron_dataset.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace bm::formats {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "bm_megatron_XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// An independent reader written from Megatron-LM's documented layout
// (megatron/core/datasets/indexed_dataset.py, _IndexReader): it shares no
// code with the library under test.
struct IndependentIndex {
  uint64_t version = 0;
  uint8_t dtype = 0;
  std::vector<int32_t> sizes;
  std::vector<int64_t> pointers;
  std::vector<int64_t> docs;
};

IndependentIndex ParseIndex(const std::vector<uint8_t>& b) {
  IndependentIndex idx;
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    EXPECT_LE(pos + n, b.size());
    std::memcpy(dst, b.data() + pos, n);
    pos += n;
  };
  char magic[9];
  take(magic, 9);
  EXPECT_EQ(0, std::memcmp(magic, "MMIDIDX\0\0", 9));
  take(&idx.version, 8);
  take(&idx.dtype, 1);
  uint64_t len = 0, doc_count = 0;
  take(&len, 8);
  take(&doc_count, 8);
  idx.sizes.resize(len);
  idx.pointers.resize(len);
  idx.docs.resize(doc_count);
  take(idx.sizes.data(), 4 * len);
  take(idx.pointers.data(), 8 * len);
  take(idx.docs.data(), 8 * doc_count);
  EXPECT_EQ(pos, b.size()) << "trailing bytes after the document index";
  return idx;
}

TEST(MegatronDatasetTest, LayoutMatchesMegatronsDocumentedFormat) {
  TempDir dir;
  const std::string prefix = dir.path() + "/train";
  auto w = IndexedDatasetWriter::Create(prefix, DType::kUInt16);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const std::vector<int32_t> a = {1, 2, 3}, b = {65535}, c = {7, 0};
  ASSERT_TRUE(w->AddSequence(a).ok());
  ASSERT_TRUE(w->AddSequence(b).ok());
  w->EndDocument();
  ASSERT_TRUE(w->AddSequence(c).ok());
  w->EndDocument();
  ASSERT_TRUE(w->Finish().ok());

  IndependentIndex idx = ParseIndex(ReadAll(prefix + ".idx"));
  EXPECT_EQ(idx.version, 1u);
  EXPECT_EQ(idx.dtype, 8);  // Megatron's code for uint16
  EXPECT_EQ(idx.sizes, (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(idx.pointers, (std::vector<int64_t>{0, 6, 8}));
  EXPECT_EQ(idx.docs, (std::vector<int64_t>{0, 2, 3}));
  const std::vector<uint8_t> bin = ReadAll(prefix + ".bin");
  EXPECT_EQ(bin, (std::vector<uint8_t>{1, 0, 2, 0, 3, 0, 0xff, 0xff, 7, 0, 0, 0}));
}

TEST(MegatronDatasetTest, ReaderRoundTripsEveryDType) {
  for (DType dt :
       {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kUInt16, DType::kInt32, DType::kInt64}) {
    TempDir dir;
    const std::string prefix = dir.path() + "/d";
    auto w = IndexedDatasetWriter::Create(prefix, dt);
    ASSERT_TRUE(w.ok());
    const std::vector<int32_t> s1 = {0, 1, 100, 127}, s2 = {5};
    ASSERT_TRUE(w->AddSequence(s1).ok());
    w->EndDocument();
    ASSERT_TRUE(w->AddSequence(s2).ok());
    ASSERT_TRUE(w->Finish().ok());  // closes the open document itself

    auto ds = IndexedDataset::Open(prefix);
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    EXPECT_EQ(ds->dtype(), dt);
    EXPECT_EQ(ds->num_sequences(), 2u);
    EXPECT_EQ(ds->num_documents(), 2u);
    EXPECT_EQ(ds->num_tokens(), 5u);
    std::vector<int32_t> out(2);
    ASSERT_TRUE(ds->ReadTokens(0, 2, 2, out.data()).ok());
    EXPECT_EQ(out, (std::vector<int32_t>{100, 127})) << DTypeName(dt);
    EXPECT_EQ(*ds->ReadSequence(1), s2);
    EXPECT_FALSE(ds->ReadTokens(0, 3, 2, out.data()).ok());
    EXPECT_FALSE(ds->ReadTokens(2, 0, 0, out.data()).ok());
  }
}

TEST(MegatronDatasetTest, RefusesTokensOutsideTheDType) {
  TempDir dir;
  auto w = IndexedDatasetWriter::Create(dir.path() + "/m", DType::kUInt8);
  ASSERT_TRUE(w.ok());
  const std::vector<int32_t> bad = {1, 256};
  EXPECT_EQ(w->AddSequence(bad).code(), ErrorCode::kInvalidArgument);
  auto w16 = IndexedDatasetWriter::Create(dir.path() + "/n", DType::kUInt16);
  const std::vector<int32_t> neg = {-1};
  EXPECT_EQ(w16->AddSequence(neg).code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(IndexedDatasetWriter::Create(dir.path() + "/f", DType::kFloat32).ok());
}

// Megatron's index stores each sequence's length as an int32 (sizes := i32[seq_count]):
// a sequence of 2^31 tokens (an 8 GB text tokenized as one document) must be refused,
// not written with a negative size. The tokens are 8 GiB of mapped zero pages, never read.
TEST(MegatronDatasetTest, RefusesASequenceLongerThanInt32Sizes) {
  const size_t count = size_t{1} << 31;
  void* p = ::mmap(nullptr, count * sizeof(int32_t), PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) GTEST_SKIP() << "cannot map 8 GiB of address space";
  TempDir dir;
  auto w = IndexedDatasetWriter::Create(dir.path() + "/m", DType::kUInt8);
  ASSERT_TRUE(w.ok());
  const Status s = w->AddSequence(std::span<const int32_t>(static_cast<const int32_t*>(p), count));
  ::munmap(p, count * sizeof(int32_t));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2147483648 tokens"), std::string::npos) << s.message();
}

TEST(MegatronDatasetTest, NothingVisibleWithoutFinish) {
  TempDir dir;
  {
    auto w = IndexedDatasetWriter::Create(dir.path() + "/x", DType::kInt32);
    ASSERT_TRUE(w.ok());
    const std::vector<int32_t> s = {1, 2};
    ASSERT_TRUE(w->AddSequence(s).ok());
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(MegatronDatasetTest, CreateFailsInMissingDirectory) {
  auto w = IndexedDatasetWriter::Create("/nonexistent-dir-bm/x", DType::kInt32);
  EXPECT_FALSE(w.ok());
}

TEST(MegatronDatasetTest, OpenRejectsMissingCorruptAndNewerFiles) {
  TempDir dir;
  const std::string prefix = dir.path() + "/c";
  EXPECT_EQ(IndexedDataset::Open(prefix).status().code(), ErrorCode::kNotFound);
  {
    auto w = IndexedDatasetWriter::Create(prefix, DType::kInt32);
    const std::vector<int32_t> s = {1, 2, 3};
    ASSERT_TRUE(w->AddSequence(s).ok());
    ASSERT_TRUE(w->Finish().ok());
  }
  std::vector<uint8_t> idx = ReadAll(prefix + ".idx");
  auto write_idx = [&](const std::vector<uint8_t>& bytes) {
    std::ofstream(prefix + ".idx", std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  std::vector<uint8_t> bad_magic = idx;
  bad_magic[0] = 'X';
  write_idx(bad_magic);
  EXPECT_EQ(IndexedDataset::Open(prefix).status().code(), ErrorCode::kCorrupt);
  std::vector<uint8_t> newer = idx;
  newer[9] = 2;
  write_idx(newer);
  EXPECT_EQ(IndexedDataset::Open(prefix).status().code(), ErrorCode::kUnsupported);
  write_idx(std::vector<uint8_t>(idx.begin(), idx.end() - 3));
  EXPECT_EQ(IndexedDataset::Open(prefix).status().code(), ErrorCode::kCorrupt);
  write_idx(idx);
  fs::resize_file(prefix + ".bin", 8);  // sequence 0 now points past the end
  EXPECT_EQ(IndexedDataset::Open(prefix).status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace bm::formats
