// base/archive.h: xz and tar.xz unpacking, and reading compressed files and
// archives member by member. Inputs are made by the system's tar, xz, gzip.
#include "base/archive.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bm {
namespace {

namespace fs = std::filesystem;

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/bm-archive-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    Write("tree/b.txt", "beta\n");
    Write("tree/a.txt", "alpha\n");
    Write("plain.txt", "plain text\n");
    // Members in the order given (not sorted): b before a.
    Shell(
        "tar -cf t.tar tree/b.txt tree/a.txt && xz -k t.tar && cp t.tar.xz shard_data.xz"
        " && gzip -k t.tar && xz -k plain.txt && gzip -k plain.txt");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/" + name).parent_path());
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Shell(const std::string& cmd) {
    ASSERT_EQ(std::system(("cd " + dir_ + " && " + cmd).c_str()), 0) << cmd;
  }
  std::string Members(const std::string& name, Status* status = nullptr) {
    std::string seen;
    Status s = ForEachMember(dir_ + "/" + name, [&](const std::string& n, std::string bytes) {
      seen += n + "=" + bytes;
      return Status::Ok();
    });
    if (status != nullptr) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.message();
    return seen;
  }

  std::string dir_;
};

TEST_F(ArchiveTest, XzAndTarXzUnpack) {
  EXPECT_TRUE(IsUnpackFormat("xz"));
  EXPECT_TRUE(IsUnpackFormat("tar.xz"));
  ASSERT_TRUE(DecompressFile(dir_ + "/plain.txt.xz", "xz", dir_ + "/out.txt").ok());
  EXPECT_EQ(Read("out.txt"), "plain text\n");
  fs::create_directories(dir_ + "/x");
  Status st = ExtractArchive(dir_ + "/t.tar.xz", "tar.xz", dir_ + "/x");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Read("x/tree/a.txt"), "alpha\n");
  EXPECT_EQ(Read("x/tree/b.txt"), "beta\n");
}

TEST_F(ArchiveTest, BadXzIsCorrupt) {
  Write("not.xz", "this is not xz");
  EXPECT_EQ(DecompressFile(dir_ + "/not.xz", "xz", dir_ + "/o").code(), ErrorCode::kCorrupt);
  std::string whole = Read("plain.txt.xz");
  Write("cut.xz", whole.substr(0, whole.size() / 2));
  EXPECT_EQ(DecompressFile(dir_ + "/cut.xz", "xz", dir_ + "/o").code(), ErrorCode::kCorrupt);
  fs::create_directories(dir_ + "/y");
  EXPECT_EQ(ExtractArchive(dir_ + "/not.xz", "tar.xz", dir_ + "/y").code(), ErrorCode::kCorrupt);
}

// A full disk names the file and the reason, as gzip -d does ("gzip: x:
// No space left on device"); /dev/full fails every write with ENOSPC.
TEST_F(ArchiveTest, AFullDiskNamesTheFileAndTheReason) {
  Write("big.txt", std::string(1 << 20, 'z'));
  Shell("gzip -k big.txt");
  Status st = DecompressFile(dir_ + "/big.txt.gz", "gz", "/dev/full");
  EXPECT_EQ(st.code(), ErrorCode::kIo);
  EXPECT_NE(st.message().find("/dev/full"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
}

TEST_F(ArchiveTest, ForEachMemberReadsTarsWhateverTheCompressionInArchiveOrder) {
  for (const char* name : {"t.tar", "t.tar.xz", "t.tar.gz", "shard_data.xz"}) {
    EXPECT_EQ(Members(name), "tree/b.txt=beta\ntree/a.txt=alpha\n") << name;
  }
  EXPECT_TRUE(IsCompressedOrArchive("urlsf_subset00-1_data.xz"));
  EXPECT_TRUE(IsCompressedOrArchive("t.tar"));
  EXPECT_FALSE(IsCompressedOrArchive("a.txt"));
}

TEST_F(ArchiveTest, ForEachMemberReadsACompressedFileAsOneMember) {
  EXPECT_EQ(Members("plain.txt.xz"), "plain.txt=plain text\n");
  EXPECT_EQ(Members("plain.txt.gz"), "plain.txt=plain text\n");
}

TEST_F(ArchiveTest, ForEachMemberFailures) {
  Status st;
  Members("missing.xz", &st);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.message();
  // A link inside is refused, naming it.
  Shell("ln -s tree/a.txt link.txt && tar -cJf links.tar.xz link.txt");
  Members("links.tar.xz", &st);
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
  EXPECT_NE(st.message().find("'link.txt' is not a regular file"), std::string::npos);
  // A truncated shard.
  std::string whole = Read("shard_data.xz");
  Write("cut_data.xz", whole.substr(0, whole.size() - 40));
  Members("cut_data.xz", &st);
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt) << st.message();
  // The callback's error stops the reading.
  int calls = 0;
  st = ForEachMember(dir_ + "/t.tar", [&](const std::string&, std::string) {
    ++calls;
    return Status(ErrorCode::kInvalidArgument, "stop");
  });
  EXPECT_EQ(st.message(), "stop");
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace bm
