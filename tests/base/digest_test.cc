#include "base/digest.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/real_filesystem.h"

namespace bm {
namespace {

TEST(DigestTest, MatchesXxh128ReferenceValues) {
  // XXH3_128bits("") from the xxHash reference (xxhsum -H2 of an empty file).
  EXPECT_EQ(DigestOf("").Hex(), "99aa06d3014798d86001c324468d497f");
  EXPECT_NE(DigestOf("a"), DigestOf("b"));
}

TEST(DigestTest, StreamingEqualsOneShot) {
  std::string data(1 << 20, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  Hasher h;
  h.Update(data.substr(0, 1000));
  h.Update(data.substr(1000));
  EXPECT_EQ(h.Finish(), DigestOf(data));
}

TEST(DigestTest, TaggedFieldsDoNotCollideOnConcatenation) {
  Hasher a, b;
  a.Field("ab", "c");
  b.Field("a", "bc");
  EXPECT_NE(a.Finish(), b.Finish());
}

TEST(DigestTest, HexRoundTripAndErrors) {
  Digest d = DigestOf("hello");
  Result<Digest> back = Digest::FromHex(d.Hex());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, d);
  EXPECT_FALSE(Digest::FromHex("xyz").ok());
  EXPECT_FALSE(Digest::FromHex(std::string(32, 'g')).ok());
}

TEST(DigestTest, FileHashEqualsXxhsum) {
  if (std::system("command -v xxhsum > /dev/null") != 0)
    GTEST_SKIP() << "xxhsum not installed (Debian: xxhash)";
  std::string path = ::testing::TempDir() + "/digest_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 3 * (1 << 20) + 17; ++i) out.put(static_cast<char>(i * 7));
  }
  Result<Digest> d = DiskFilesystem().HashFile(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  FILE* p = ::popen(("xxhsum -H2 '" + path + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[128] = {};
  ASSERT_NE(std::fgets(buf, sizeof buf, p), nullptr);
  ::pclose(p);
  EXPECT_EQ(std::string(buf).substr(0, 32), d->Hex());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace bm
