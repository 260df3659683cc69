#include "base/formats/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace bm::formats {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}

TEST(NpyTest, RoundTripsIntegerArrays) {
  const std::vector<int32_t> v = {0, -1, 50256, 7};
  auto a = ParseNpy(SerializeNpy(NpyArray::FromInt32(v)), "t");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->descr, "<i4");
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{4}));
  EXPECT_EQ(*a->ToInt64(), (std::vector<int64_t>{0, -1, 50256, 7}));
  const std::string bytes = SerializeNpy(NpyArray::FromUInt16({1, 65535}));
  EXPECT_EQ((bytes.size() - 4) % 64, 0u);  // header padded to 64 bytes, as numpy does
  EXPECT_EQ(*ParseNpy(bytes, "t")->ToInt64(), (std::vector<int64_t>{1, 65535}));
}

// Bytes as numpy 1.24 writes np.save(f, np.array([1, 2, 3], dtype=np.int64)).
TEST(NpyTest, ParsesNumpysOwnHeader) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  for (int64_t v : {1, 2, 3}) bytes.append(reinterpret_cast<const char*>(&v), 8);
  auto a = ParseNpy(bytes, "t");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a->ToInt64(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(NpyTest, RejectsBadFiles) {
  std::string good = SerializeNpy(NpyArray::FromInt32({1, 2}));
  EXPECT_EQ(ParseNpy("nope", "t").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseNpy(good.substr(0, good.size() - 1), "t").status().code(), ErrorCode::kCorrupt);
  std::string big = good;
  big.replace(big.find("<i4"), 3, ">i4");
  EXPECT_EQ(ParseNpy(big, "t").status().code(), ErrorCode::kUnsupported);
  std::string f = good;
  f.replace(f.find("<i4"), 3, "<f4");
  EXPECT_EQ(ParseNpy(f, "t").status().code(), ErrorCode::kUnsupported);
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_EQ(ParseNpy(fortran, "t").status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(ReadNpy("/nonexistent.npy").status().code(), ErrorCode::kNotFound);
}

TEST(NpzTest, WritesAndReadsStoredZip) {
  const std::string path = TempPath("idx.npz");
  ASSERT_TRUE(WriteNpz(path, {{"lens", NpyArray::FromInt32({3, 1, 2})},
                              {"docs", NpyArray::FromInt64({0, 2, 3})}})
                  .ok());
  auto arrays = ReadNpz(path);
  ASSERT_TRUE(arrays.ok()) << arrays.status().message();
  EXPECT_EQ(*arrays->at("lens").ToInt64(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(*arrays->at("docs").ToInt64(), (std::vector<int64_t>{0, 2, 3}));
  fs::remove(path);
}

TEST(NpzTest, RejectsMissingAndNonZipFiles) {
  EXPECT_FALSE(ReadNpz("/nonexistent.npz").ok());
  const std::string path = TempPath("bad.npz");
  ASSERT_TRUE(WriteNpy(path, NpyArray::FromInt32({1})).ok());  // an .npy, not a zip
  EXPECT_FALSE(ReadNpz(path).ok());
  fs::remove(path);
}

}  // namespace
}  // namespace bm::formats
