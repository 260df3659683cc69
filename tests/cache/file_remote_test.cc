#include "cache/remote/file_remote.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class FileRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = bm::testing::MakeTempDir("bm-file-remote");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    auto remote = FileRemote::Create("file://" + dir_ + "/shared");
    ASSERT_TRUE(remote.ok());
    remote_ = std::move(*remote);
  }
  void TearDown() override { bm::testing::RemoveTree(dir_); }
  std::string Local(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string dir_;
  std::unique_ptr<FileRemote> remote_;
};

TEST_F(FileRemoteTest, PutGetExistsRoundTrip) {
  Digest d = DigestOf("shared bytes");
  EXPECT_FALSE(*remote_->Exists(Namespace::kCas, d));
  EXPECT_FALSE(*remote_->Get(Namespace::kCas, d, dir_ + "/out"));
  ASSERT_TRUE(remote_->Put(Namespace::kCas, d, Local("in", "shared bytes")).ok());
  EXPECT_EQ(remote_->PathOf(Namespace::kCas, d), dir_ + "/shared/cas/" + d.Hex());
  EXPECT_TRUE(*remote_->Exists(Namespace::kCas, d));
  ASSERT_TRUE(*remote_->Get(Namespace::kCas, d, dir_ + "/out"));
  EXPECT_EQ(ReadFile(dir_ + "/out"), "shared bytes");
  EXPECT_EQ(remote_->url(), "file://" + dir_ + "/shared");
}

TEST_F(FileRemoteTest, CorruptBlobIsRejectedAndNotLeftAtDest) {
  Digest d = DigestOf("good");
  ASSERT_TRUE(remote_->Put(Namespace::kCas, d, Local("in", "evil")).ok());
  auto got = remote_->Get(Namespace::kCas, d, dir_ + "/out");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(fs::exists(dir_ + "/out"));
}

TEST_F(FileRemoteTest, RejectsUrlsThatAreNotAbsoluteFilePaths) {
  EXPECT_EQ(FileRemote::Create("file://host/x").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(FileRemote::Create("file://localhost/x").ok());
  auto bad = FileRemote::Create("file:///data/100%/cache");
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("%25"), std::string::npos) << bad.status().message();
}

TEST_F(FileRemoteTest, PercentEscapesInTheUrlAreDecoded) {
  // RFC 3986 as `curl file:///tmp/a%20b/x` and Python's url2pathname read it:
  // "%20" is a space, "%25" a '%'; a literal space is taken as it is.
  auto remote = FileRemote::Create("file://" + dir_ + "/team%20cache%2525");
  ASSERT_TRUE(remote.ok()) << remote.status().message();
  Digest d = DigestOf("shared");
  ASSERT_TRUE((*remote)->Put(Namespace::kCas, d, Local("in", "shared")).ok());
  EXPECT_TRUE(fs::exists(dir_ + "/team cache%25/cas/" + d.Hex()));
  EXPECT_FALSE(fs::exists(dir_ + "/team%20cache%2525"));
  auto spaced = FileRemote::Create("file://" + dir_ + "/team cache%2525");
  ASSERT_TRUE(spaced.ok());
  Result<bool> there = (*spaced)->Exists(Namespace::kCas, d);
  EXPECT_TRUE(there.ok() && *there);
}

// Put writes a temp name and renames: a writer killed mid-copy leaves nothing
// under the key. The source is a FIFO so the child blocks mid-copy for sure.
TEST_F(FileRemoteTest, KillNineDuringPutLeavesNoPartialValueUnderItsKey) {
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Digest d = DigestOf("whatever");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    (void)remote_->Put(Namespace::kCas, d, fifo);
    _exit(0);
  }
  int w = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(w, 0);
  std::string chunk(1 << 16, 'x');
  ASSERT_EQ(write(w, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
  // Wait for the partial temp file to show up.
  std::string cas = dir_ + "/shared/cas";
  bool saw_temp = false;
  for (int i = 0; i < 200 && !saw_temp; ++i) {
    std::error_code ec;
    for (auto& e : fs::directory_iterator(cas, ec)) {
      saw_temp |= e.path().filename().string().rfind(".tmp-", 0) == 0 && e.file_size() > 0;
    }
    if (!saw_temp) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(saw_temp);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(w);
  EXPECT_FALSE(*remote_->Exists(Namespace::kCas, d));
  EXPECT_FALSE(fs::exists(remote_->PathOf(Namespace::kCas, d)));
}

}  // namespace
}  // namespace bm::cache
