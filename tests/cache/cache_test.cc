#include "cache/cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

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

TEST_F(CacheTest, MaterializeGivesTheRecordsModeNotTheBlobs) {
  // One blob, stored by an executable output: a plain output of the same bytes
  // must not come out executable, nor the executable one lose its bit.
  fs_.Write("/work/out/tool.sh", "#!/bin/sh\n");
  ASSERT_TRUE(fs_.SetExecutable("/work/out/tool.sh").ok());
  Digest d = *cache_.PutFile("/work/out/tool.sh");
  std::string blob = cache_.local().PathOf(Namespace::kCas, d);
  fs_.Write("/ws/out/a/.keep", "");
  ASSERT_TRUE(cache_.Materialize(d, "/ws/out/a/plain.txt", /*executable=*/false).ok());
  ASSERT_TRUE(cache_.Materialize(d, "/ws/out/a/tool.sh", /*executable=*/true).ok());
  EXPECT_FALSE(fs_.Stat("/ws/out/a/plain.txt")->executable);
  EXPECT_TRUE(fs_.Stat("/ws/out/a/tool.sh")->executable);
  EXPECT_EQ(fs_.Read("/ws/out/a/plain.txt"), "#!/bin/sh\n");
  EXPECT_TRUE(fs_.Stat(blob)->executable) << "the blob keeps its mode";
  EXPECT_EQ(fs_.Stat("/ws/out/a/tool.sh")->inode, fs_.Stat(blob)->inode) << "same mode: a link";
  // A blob stored without the bit (as every blob fetched from a remote is).
  Digest plain = *cache_.PutBytes("#!/bin/sh\nexit 0\n");
  ASSERT_TRUE(cache_.Materialize(plain, "/ws/out/a/run.sh", /*executable=*/true).ok());
  EXPECT_TRUE(fs_.Stat("/ws/out/a/run.sh")->executable);
  EXPECT_FALSE(fs_.Stat(cache_.local().PathOf(Namespace::kCas, plain))->executable);
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

// The store renames only files into place: a directory where an entry belongs is damage,
// removed and taken for a miss (it used to fail every build that met it, naming EISDIR).
TEST_F(CacheTest, ADirectoryWhereAnEntryBelongsIsRemovedAndAMiss) {
  Digest d = *cache_.PutBytes("weights");
  std::string blob = cache_.local().PathOf(Namespace::kCas, d);
  ASSERT_TRUE(fs_.RemoveAll(blob).ok());
  fs_.Write(blob + "/inside", "x");
  ASSERT_TRUE(fs_.Stat(blob)->is_dir);
  fs_.Write("/ws/x/.keep", "");
  EXPECT_EQ(cache_.Materialize(d, "/ws/x/model.bin").code(), ErrorCode::kNotFound);
  EXPECT_FALSE(fs_.Exists(blob)) << "removed";
  EXPECT_FALSE(fs_.Exists(blob + "/inside"));
  ASSERT_TRUE(cache_.PutBytes("weights").ok());
  EXPECT_EQ(fs_.Read(blob), "weights");

  Digest key = DigestOf("k");
  std::string ac = cache_.local().PathOf(Namespace::kAc, key);
  fs_.Write(ac + "/inside", "x");
  Result<std::optional<ActionRecord>> got = cache_.GetAction(key);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_FALSE(got->has_value());
  EXPECT_FALSE(fs_.Exists(ac));
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
  const size_t nl = text.find('\n');
  EXPECT_EQ(text.substr(0, nl), "benchmake-action 2 " + DigestOf(text.substr(nl + 1)).Hex());
  Result<ActionRecord> newer = ParseRecord("benchmake-action 3\n{}");
  EXPECT_EQ(newer.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(newer.status().message().find("upgrade benchmake"), std::string::npos);
}

// A record as release 0.1.0 wrote it (version 1, no digest; a workspace's words target, as
// found in its cache) is still read.
TEST_F(CacheTest, AVersionOneRecordIsStillRead) {
  const std::string v1 = R"(benchmake-action 1
{
 "key": "270ea1aa3c937a5fe8312d88cc5f348c",
 "log": "2d88a37da68b2ff3b50c1a736b2b6b81",
 "metrics": {},
 "outputs": [
  {
   "digest": "79933d528d5bf17919a1c73bff71b02b",
   "exec": false,
   "path": "words.txt",
   "size": 18369
  }
 ],
 "provenance": {
  "benchmake": "0.1.0",
  "date": "2026-12-03T13:53:19Z",
  "duration_s": 0.041447423,
  "host": "vm",
  "platform": {}
 },
 "target": "words"
}
)";
  Result<ActionRecord> r = ParseRecord(v1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->key.Hex(), "270ea1aa3c937a5fe8312d88cc5f348c");
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].path, "words.txt");
  EXPECT_EQ(r->outputs[0].size, 18369u);
}

// A bit flipped in a record can leave valid JSON that says something else: a file name
// (`config.json` read as `config.jskn` restored a target with the wrong file, found by
// scripts/fuzz_state.py) or a metric's digit. Such a record is a miss, and evicted.
TEST_F(CacheTest, ARecordDamagedIntoOtherJsonIsAMissAndEvicted) {
  ActionRecord r;
  r.key = DigestOf("key");
  r.target = "train";
  r.outputs = {{"config.json", DigestOf("c"), 1, false}};
  r.metrics = {{"tokens_per_s", 1234.5}};
  for (const std::string& from : {std::string("config.json"), std::string("1234.5")}) {
    std::string text = SerializeRecord(r);
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text[at + from.size() - 3] ^= 0x02;  // "config.jqon", "1236.5": still JSON
    ASSERT_TRUE(nlohmann::json::accept(text.substr(text.find('\n') + 1)));
    Result<ActionRecord> parsed = ParseRecord(text);
    EXPECT_EQ(parsed.status().code(), ErrorCode::kCorrupt) << from;
    EXPECT_NE(parsed.status().message().find("do not match its digest"), std::string::npos);
    ASSERT_TRUE(cache_.local().InstallBytes(Namespace::kAc, r.key, text).ok());
    Result<std::optional<ActionRecord>> got = cache_.GetAction(r.key);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_FALSE(got->has_value()) << from;
    EXPECT_FALSE(fs_.Exists(cache_.local().PathOf(Namespace::kAc, r.key)));
  }
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

TEST_F(CacheTest, GcRemovesTemporariesThatKilledProcessesLeftAfterAnHour) {
  // A fetch killed with -9 leaves tmp/prefetch.XXXX/ with part of a blob.
  fs_.Write("/cache/tmp/prefetch.old/0", std::string(5000, 'p'));
  fs_.Write("/cache/tmp/gone.tmp.1.0", "x");
  int64_t then = fs_.Stat("/cache/tmp/gone.tmp.1.0")->mtime_ns;
  fs_.Write("/cache/tmp/fetch.running/value", "being written");
  int64_t now = fs_.Stat("/cache/tmp/fetch.running/value")->mtime_ns;
  const int64_t kHour = int64_t{3600} * 1000000000;
  Result<GcReport> r = CollectGarbage(cache_.local(), uint64_t{1} << 40, then + kHour);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stale_temps, 2u);
  EXPECT_EQ(r->stale_temp_bytes, 5001u);
  EXPECT_FALSE(fs_.Exists("/cache/tmp/prefetch.old/0"));
  EXPECT_FALSE(fs_.Exists("/cache/tmp/gone.tmp.1.0"));
  EXPECT_TRUE(fs_.Exists("/cache/tmp/fetch.running/value")) << "younger than an hour";
  r = CollectGarbage(cache_.local(), uint64_t{1} << 40, now + kHour - 1);
  EXPECT_TRUE(fs_.Exists("/cache/tmp/fetch.running/value"));
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

TEST_F(CacheTest, VerifyReportsAndRemovesADirectoryWhereAnEntryBelongs) {
  Digest d = *cache_.PutBytes("x");
  std::string blob = cache_.local().PathOf(Namespace::kCas, d);
  ASSERT_TRUE(fs_.RemoveAll(blob).ok());
  fs_.Write(blob + "/inside", "0123456789");
  Result<StoreStats> before = ComputeStats(cache_.local());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->blobs, 0u) << "no blob";
  Result<GcReport> gc = CollectGarbage(cache_.local(), 0);
  ASSERT_TRUE(gc.ok()) << gc.status().message();
  EXPECT_EQ(gc->removed, 0u);
  Result<VerifyReport> r = Verify(cache_.local());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->evicted.size(), 1u);
  EXPECT_EQ(r->evicted[0], blob + ": a directory, not a file");
  EXPECT_FALSE(fs_.Exists(blob));
}

TEST_F(CacheTest, VerifyDoesNotCallACorruptEntryEvictedWhenItCouldNotRemoveIt) {
  // A read-only cache directory (as any user but root sees it).
  Digest d = *cache_.PutBytes("x");
  std::string blob = cache_.local().PathOf(Namespace::kCas, d);
  fs_.CorruptInPlace(blob, "y");
  fs_.FailRemovesMatching("/cache/cas/");
  Result<VerifyReport> r = Verify(cache_.local());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->evicted.empty());
  ASSERT_EQ(r->not_evicted.size(), 1u);
  EXPECT_NE(r->not_evicted[0].find(blob), std::string::npos) << r->not_evicted[0];
  EXPECT_NE(r->not_evicted[0].find("Permission denied"), std::string::npos) << r->not_evicted[0];
  EXPECT_TRUE(fs_.Exists(blob));
}

// A remote in memory; `fail` makes every call fail with that code.
class FakeRemote : public RemoteBackend {
 public:
  explicit FakeRemote(testing::MemoryFilesystem* fs) : fs_(fs) {}
  std::string url() const override { return "fake://remote"; }
  Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest) override {
    ++gets;
    if (fail != ErrorCode::kOk) return Status(fail, "down");
    auto it = store.find(Key(ns, key));
    if (it == store.end()) return false;
    fs_->Write(dest, it->second);
    return true;
  }
  Status Put(Namespace ns, const Digest& key, const std::string& src) override {
    if (fail != ErrorCode::kOk) return Status(fail, "down");
    store[Key(ns, key)] = fs_->Read(src);
    return Status::Ok();
  }
  Result<bool> Exists(Namespace ns, const Digest& key) override {
    if (fail != ErrorCode::kOk) return Status(fail, "down");
    return store.count(Key(ns, key)) > 0;
  }
  static std::string Key(Namespace ns, const Digest& d) {
    return std::string(NamespaceName(ns)) + "/" + d.Hex();
  }

  std::map<std::string, std::string> store;
  ErrorCode fail = ErrorCode::kOk;
  int gets = 0;

 private:
  testing::MemoryFilesystem* fs_;
};

TEST(RemoteLayeringTest, WritesThroughAndFillsLocalOnRemoteHit) {
  testing::MemoryFilesystem fs;
  auto remote = std::make_unique<FakeRemote>(&fs);
  FakeRemote* r = remote.get();
  Cache writer(fs, "/cache1");
  ASSERT_TRUE(writer.Init().ok());
  writer.AddRemote(std::move(remote), /*read_only=*/false);
  Digest blob = *writer.PutBytes("weights");
  ActionRecord rec;
  rec.key = DigestOf("k");
  rec.outputs = {{"w", blob, 7, false}};
  ASSERT_TRUE(writer.PutAction(rec).ok());
  EXPECT_EQ(r->store.size(), 2u) << "blob and record pushed";

  // A second machine: empty local cache, same remote.
  auto shared = std::make_unique<FakeRemote>(&fs);
  shared->store = r->store;
  FakeRemote* s = shared.get();
  Cache reader(fs, "/cache2");
  ASSERT_TRUE(reader.Init().ok());
  reader.AddRemote(std::move(shared), /*read_only=*/true);
  Result<std::optional<ActionRecord>> got = reader.GetAction(rec.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  fs.Write("/ws/x/.keep", "");
  ASSERT_TRUE(reader.Materialize(blob, "/ws/x/w").ok());
  EXPECT_EQ(fs.Read("/ws/x/w"), "weights");
  int gets = s->gets;
  ASSERT_TRUE(reader.GetAction(rec.key).ok());
  EXPECT_EQ(s->gets, gets) << "second lookup served locally";
}

TEST(RemoteLayeringTest, FailingRemoteIsAMissAndMarkedDead) {
  testing::MemoryFilesystem fs;
  auto remote = std::make_unique<FakeRemote>(&fs);
  FakeRemote* r = remote.get();
  r->fail = ErrorCode::kTimeout;
  Cache cache(fs, "/cache");
  ASSERT_TRUE(cache.Init().ok());
  cache.AddRemote(std::move(remote), false);
  Result<std::optional<ActionRecord>> got = cache.GetAction(DigestOf("nope"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_FALSE(got->has_value());
  ASSERT_TRUE(cache.GetAction(DigestOf("nope2")).ok());
  EXPECT_EQ(r->gets, 1) << "dead after the first failure";
  EXPECT_TRUE(cache.PutBytes("x").ok()) << "a dead remote never fails a write";
}

TEST(RemoteRegistryTest, CreatesByScheme) {
  RemoteRegistry registry;
  registry.Register(
      "fake",
      [](const std::string&, const RemoteOptions&) -> Result<std::unique_ptr<RemoteBackend>> {
        return std::unique_ptr<RemoteBackend>(new FakeRemote(nullptr));
      });
  EXPECT_TRUE(registry.Create("fake://x", {}).ok());
  Result<std::unique_ptr<RemoteBackend>> bad = registry.Create("gopher://x", {});
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("known: fake"), std::string::npos);
  EXPECT_FALSE(registry.Create("no-scheme", {}).ok());
}

TEST(SizeTest, ParsesUnits) {
  EXPECT_EQ(*ParseSize("10G"), 10ull << 30);
  EXPECT_EQ(*ParseSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseSize("1.5KiB"), 1536u);
  EXPECT_EQ(*ParseSize("100"), 100u);
  EXPECT_FALSE(ParseSize("ten").ok());
  EXPECT_FALSE(ParseSize("5X").ok());
  // strtod reads these; no size is meant (and llround of them is undefined).
  for (const char* bad : {"nan", "inf", "-inf", "1e30", "20E"}) {
    Result<uint64_t> r = ParseSize(bad);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(*ParseSize("1T"), 1ull << 40);
}

TEST(DefaultCacheDirTest, EnvironmentOrder) {
  struct Restore {
    std::map<std::string, std::optional<std::string>> saved;
    Restore() {
      for (const char* n : {"BENCHMAKE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
        const char* v = std::getenv(n);
        saved[n] = v ? std::optional<std::string>(v) : std::nullopt;
      }
    }
    ~Restore() {
      for (const auto& [n, v] : saved)
        v ? (void)::setenv(n.c_str(), v->c_str(), 1) : (void)::unsetenv(n.c_str());
    }
  } restore;
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

namespace bm::cache {
namespace {

// A cache directory that cannot be used is named as the cache, not as a path below it.
TEST(CacheDirectoryTest, AnUnusableCacheDirectoryIsNamed) {
  testing::MemoryFilesystem fs;
  fs.Write("/c", "a file where the cache directory goes");
  Cache cache(fs, "/c");
  Status s = cache.Init();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("cache directory /c: ", 0), 0u) << s.message();
}

}  // namespace
}  // namespace bm::cache
