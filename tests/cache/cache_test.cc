#include "cache/cache.h"

#include <gtest/gtest.h>

#include "cache/maintenance.h"
#include "tests/support/memory_filesystem.h"

namespace bm::cache {
namespace {

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cache_.Init().ok()); }
  testing::MemoryFilesystem fs_;
  Cache cache_{fs_, "/cache"};
};

TEST_F(CacheTest, PutMaterializeVerifies) {
  fs_.Write("/work/out/model.bin", "weights");
  Result<Digest> d = cache_.PutFile("/work/out/model.bin");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, DigestOf("weights"));
  fs_.Write("/ws/out/a/.keep", "");
  ASSERT_TRUE(cache_.Materialize(*d, "/ws/out/a/model.bin").ok());
  EXPECT_EQ(fs_.Read("/ws/out/a/model.bin"), "weights");
  EXPECT_EQ(fs_.Stat("/ws/out/a/model.bin")->inode,
            fs_.Stat(cache_.local().PathOf(Namespace::kCas, *d))->inode)
      << "materialized by hard link";
}

TEST_F(CacheTest, CorruptBlobIsEvictedAndReported) {
  Result<Digest> d = cache_.PutBytes("weights");
  ASSERT_TRUE(d.ok());
  std::string blob = cache_.local().PathOf(Namespace::kCas, *d);
  fs_.CorruptInPlace(blob, "weightz");
  fs_.Write("/ws/x/.keep", "");
  Status s = cache_.Materialize(*d, "/ws/x/model.bin");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find(blob), std::string::npos);
  EXPECT_FALSE(fs_.Exists(blob)) << "evicted";
  EXPECT_EQ(cache_.Materialize(*d, "/ws/x/model.bin").code(), ErrorCode::kNotFound);
}

TEST_F(CacheTest, ActionRecordRoundTripAndVersionCheck) {
  ActionRecord r;
  r.key = DigestOf("key");
  r.target = "train";
  r.outputs = {{"model.bin", DigestOf("w"), 1, false}};
  r.metrics = {{"tokens_per_s", 123.5}};
  r.provenance.host = "h";
  ASSERT_TRUE(cache_.PutAction(r).ok());
  Result<std::optional<ActionRecord>> got = cache_.GetAction(r.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->outputs, r.outputs);
  EXPECT_EQ((*got)->metrics["tokens_per_s"], 123.5);
  std::string text = SerializeRecord(r);
  EXPECT_EQ(text.rfind("benchmake-action 1\n", 0), 0u);
  Result<ActionRecord> newer = ParseRecord("benchmake-action 2\n{}");
  EXPECT_EQ(newer.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(newer.status().message().find("upgrade benchmake"), std::string::npos);
}

TEST_F(CacheTest, MalformedRecordIsAMissAndEvicted) {
  Digest key = DigestOf("k");
  ASSERT_TRUE(
      cache_.local().InstallBytes(Namespace::kAc, key, "benchmake-action 1\nnot json").ok());
  Result<std::optional<ActionRecord>> got = cache_.GetAction(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_FALSE(fs_.Exists(cache_.local().PathOf(Namespace::kAc, key)));
}

TEST_F(CacheTest, GcEvictsLeastRecentlyUsedFirst) {
  Digest old_blob = *cache_.PutBytes(std::string(100, 'a'));
  Digest new_blob = *cache_.PutBytes(std::string(100, 'b'));
  Digest used_blob = *cache_.PutBytes(std::string(100, 'c'));
  cache_.local().MarkUsed(Namespace::kCas, old_blob);  // now the most recent
  Result<GcReport> r = CollectGarbage(cache_.local(), 250);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->removed, 1u);
  EXPECT_FALSE(*cache_.HasBlob(new_blob));
  EXPECT_TRUE(*cache_.HasBlob(old_blob));
  EXPECT_TRUE(*cache_.HasBlob(used_blob));
}

TEST_F(CacheTest, VerifyFindsCorruption) {
  Digest d = *cache_.PutBytes("x");
  fs_.CorruptInPlace(cache_.local().PathOf(Namespace::kCas, d), "y");
  Result<VerifyReport> r = Verify(cache_.local());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evicted.size(), 1u);
  Result<StoreStats> s = ComputeStats(cache_.local());
  EXPECT_EQ(s->blobs, 0u);
}

TEST(SizeTest, ParsesUnits) {
  EXPECT_EQ(*ParseSize("10G"), 10ull << 30);
  EXPECT_EQ(*ParseSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseSize("1.5KiB"), 1536u);
  EXPECT_EQ(*ParseSize("100"), 100u);
  EXPECT_FALSE(ParseSize("ten").ok());
  EXPECT_FALSE(ParseSize("5X").ok());
}

TEST(DefaultCacheDirTest, EnvironmentOrder) {
  ::setenv("BENCHMAKE_CACHE_DIR", "/a", 1);
  EXPECT_EQ(DefaultCacheDir(), "/a");
  ::unsetenv("BENCHMAKE_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(DefaultCacheDir(), "/x/benchmake");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(DefaultCacheDir(), "/h/.cache/benchmake");
}

}  // namespace
}  // namespace bm::cache
