#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/real_filesystem.h"
#include "base/stat_cache.h"
#include "tests/support/memory_filesystem.h"

namespace bm {
namespace {

class RealFilesystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/fs_test_" + std::to_string(::getpid());
    ASSERT_TRUE(fs_.MakeDirs(dir_).ok());
  }
  void TearDown() override { (void)fs_.RemoveAll(dir_); }
  RealFilesystem fs_;
  std::string dir_;
};

TEST_F(RealFilesystemTest, AtomicWriteReplacesAndLeavesNoTemporaries) {
  std::string p = dir_ + "/f";
  ASSERT_TRUE(fs_.WriteFileAtomic(p, "one").ok());
  ASSERT_TRUE(fs_.WriteFileAtomic(p, "two", /*read_only=*/true).ok());
  EXPECT_EQ(*fs_.ReadFile(p), "two");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0222, 0u) << "read-only";
  EXPECT_EQ(fs_.ListDir(dir_)->size(), 1u);
}

TEST_F(RealFilesystemTest, FailedWriteLeavesOldFileIntact) {
  std::string p = dir_ + "/missing_dir/f";
  EXPECT_FALSE(fs_.WriteFileAtomic(p, "x").ok());
  EXPECT_FALSE(fs_.Stat(p)->exists);
}

TEST_F(RealFilesystemTest, LinkOrCopySharesTheInode) {
  std::string a = dir_ + "/a", b = dir_ + "/b";
  ASSERT_TRUE(fs_.WriteFileAtomic(a, "data").ok());
  ASSERT_TRUE(fs_.LinkOrCopy(a, b).ok());
  EXPECT_EQ(fs_.Stat(a)->inode, fs_.Stat(b)->inode);
  EXPECT_EQ(*fs_.HashFile(b), DigestOf("data"));
}

// link(2) on a symbolic link links the link: a relative one then dangles in
// the cache, and chmod/utimes through it change its target, wherever it is.
TEST_F(RealFilesystemTest, LinkOrCopyOfASymlinkCopiesItsTargetsBytes) {
  std::string target = dir_ + "/target", rel = dir_ + "/rel", abs = dir_ + "/abs";
  ASSERT_TRUE(fs_.WriteFileAtomic(target, "data").ok());
  ASSERT_EQ(::symlink("target", rel.c_str()), 0);
  ASSERT_EQ(::symlink(target.c_str(), abs.c_str()), 0);
  ASSERT_TRUE(fs_.MakeDirs(dir_ + "/elsewhere").ok());
  for (const std::string& link : {rel, abs}) {
    std::string copy = dir_ + "/elsewhere/copy";
    ASSERT_TRUE(fs_.LinkOrCopy(link, copy).ok()) << link;
    struct stat st {};
    ASSERT_EQ(::lstat(copy.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << link << ": a file, not a link";
    EXPECT_NE(st.st_ino, fs_.Stat(target)->inode) << link << ": not the target's inode";
    Result<std::string> bytes = fs_.ReadFile(copy);
    ASSERT_TRUE(bytes.ok()) << link << ": " << bytes.status().message();
    EXPECT_EQ(*bytes, "data");
    ASSERT_TRUE(fs_.SetReadOnly(copy).ok());
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_NE(st.st_mode & 0200, 0u) << link << ": the target stays writable";
    ASSERT_TRUE(fs_.Remove(copy).ok());
  }
}

TEST_F(RealFilesystemTest, ListFilesRecursiveNamesTheFilesReachedThroughALink) {
  ASSERT_TRUE(fs_.MakeDirs(dir_ + "/tree/own").ok());
  ASSERT_TRUE(fs_.MakeDirs(dir_ + "/elsewhere/sub").ok());
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_ + "/tree/own/a", "a").ok());
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_ + "/elsewhere/sub/b", "b").ok());
  ASSERT_EQ(::symlink((dir_ + "/elsewhere").c_str(), (dir_ + "/tree/dir").c_str()), 0);
  ASSERT_EQ(::symlink("own/a", (dir_ + "/tree/file").c_str()), 0);
  std::vector<std::string> linked;
  Result<std::vector<std::string>> files =
      ListFilesRecursive(fs_, dir_ + "/tree", nullptr, &linked);
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(*files, (std::vector<std::string>{"dir/sub/b", "file", "own/a"}));
  EXPECT_EQ(linked, (std::vector<std::string>{"dir/sub/b", "file"}));
  ASSERT_TRUE(fs_.CopyReadOnly(dir_ + "/tree/dir/sub/b", dir_ + "/copy", false).ok());
  EXPECT_NE(fs_.Stat(dir_ + "/copy")->inode, fs_.Stat(dir_ + "/elsewhere/sub/b")->inode);
  EXPECT_EQ(*fs_.ReadFile(dir_ + "/copy"), "b");
}

// A link back up the tree is a loop, reported as one (find -L: "File system loop detected"),
// not walked until the path is too long; the same directory reached twice side by side is not.
TEST_F(RealFilesystemTest, ListFilesRecursiveRefusesADirectoryLinkLoop) {
  ASSERT_TRUE(fs_.MakeDirs(dir_ + "/tree/sub").ok());
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_ + "/tree/sub/a", "a").ok());
  ASSERT_EQ(::symlink("sub", (dir_ + "/tree/again").c_str()), 0);
  Result<std::vector<std::string>> twice = ListFilesRecursive(fs_, dir_ + "/tree");
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(*twice, (std::vector<std::string>{"again/a", "sub/a"}));
  ASSERT_EQ(::symlink("..", (dir_ + "/tree/sub/up").c_str()), 0);
  Result<std::vector<std::string>> loop = ListFilesRecursive(fs_, dir_ + "/tree");
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(loop.status().message().find("/up: a directory link loop"), std::string::npos)
      << loop.status().message();
}

TEST_F(RealFilesystemTest, WriteFileIfChangedKeepsMtime) {
  std::string p = dir_ + "/stamp";
  EXPECT_TRUE(*WriteFileIfChanged(fs_, p, "x"));
  int64_t mtime = fs_.Stat(p)->mtime_ns;
  EXPECT_FALSE(*WriteFileIfChanged(fs_, p, "x"));
  EXPECT_EQ(fs_.Stat(p)->mtime_ns, mtime);
  EXPECT_TRUE(*WriteFileIfChanged(fs_, p, "y"));
}

TEST(MemoryFilesystemTest, InjectedWriteFailureKeepsOldContent) {
  testing::MemoryFilesystem fs;
  fs.Write("/d/f", "old");
  fs.FailWritesMatching("/d/f");
  EXPECT_FALSE(fs.WriteFileAtomic("/d/f", "new").ok());
  EXPECT_EQ(fs.Read("/d/f"), "old");
}

TEST(StatCacheTest, RehashesOnlyWhenStatChangesAndPersists) {
  testing::MemoryFilesystem fs;
  fs.Write("/ws/big", "bytes");
  {
    StatCache cache(fs, "/ws/stat_cache");
    ASSERT_TRUE(cache.Load().ok());
    EXPECT_EQ(*cache.Hash("/ws/big", *fs.Stat("/ws/big")), DigestOf("bytes"));
    EXPECT_EQ(*cache.Hash("/ws/big", *fs.Stat("/ws/big")), DigestOf("bytes"));
    EXPECT_EQ(fs.hash_count("/ws/big"), 1);
    ASSERT_TRUE(cache.Save().ok());
  }
  StatCache reloaded(fs, "/ws/stat_cache");
  ASSERT_TRUE(reloaded.Load().ok());
  EXPECT_EQ(*reloaded.Hash("/ws/big", *fs.Stat("/ws/big")), DigestOf("bytes"));
  EXPECT_EQ(fs.hash_count("/ws/big"), 1) << "persisted entry trusted";
  fs.Write("/ws/big", "other");
  EXPECT_EQ(*reloaded.Hash("/ws/big", *fs.Stat("/ws/big")), DigestOf("other"));
  EXPECT_EQ(fs.hash_count("/ws/big"), 2);
}

TEST(StatCacheTest, ForeignFileIsAnEmptyCache) {
  testing::MemoryFilesystem fs;
  fs.Write("/ws/stat_cache", "benchmake-stat-cache 99\ngarbage");
  fs.Write("/ws/f", "x");
  StatCache cache(fs, "/ws/stat_cache");
  EXPECT_TRUE(cache.Load().ok());
  EXPECT_EQ(*cache.Hash("/ws/f", *fs.Stat("/ws/f")), DigestOf("x"));
}

}  // namespace
}  // namespace bm
