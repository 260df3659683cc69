#include "cache/remote/signed_remote.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/remote/file_remote.h"
#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SignRecordTest, VerifiesItsOwnSignatureOnly) {
  std::string env = SignRecord("k1", "00ff", "benchmake-action 1\n{}");
  auto ok = VerifyRecord("k1", "00ff", env);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "benchmake-action 1\n{}");
  EXPECT_EQ(VerifyRecord("k2", "00ff", env).status().code(), ErrorCode::kCorrupt);  // other key
  EXPECT_EQ(VerifyRecord("k1", "00fe", env).status().code(), ErrorCode::kCorrupt);  // replayed
  std::string tampered = env;
  tampered.back() = ']';
  EXPECT_EQ(VerifyRecord("k1", "00ff", tampered).status().code(), ErrorCode::kCorrupt);
  auto unsigned_record = VerifyRecord("k1", "00ff", "benchmake-action 1\n{}");
  EXPECT_EQ(unsigned_record.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(unsigned_record.status().message().find("not signed"), std::string::npos);
  EXPECT_EQ(StripEnvelope(env), "benchmake-action 1\n{}");
  EXPECT_EQ(StripEnvelope("plain"), "plain");
}

class SignedRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = bm::testing::MakeTempDir("bm-signed");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { bm::testing::RemoveTree(dir_); }
  std::unique_ptr<SignedRemote> Client(const std::string& key) {
    return std::make_unique<SignedRemote>(std::move(*FileRemote::Create("file://" + dir_ + "/r")),
                                          key);
  }
  std::string Local(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string dir_;
};

TEST_F(SignedRemoteTest, SignedRoundTripAndUnsignedReaderStripsTheEnvelope) {
  Digest key = DigestOf("action");
  ASSERT_TRUE(Client("secret")->Put(Namespace::kAc, key, Local("rec", "RECORD")).ok());
  EXPECT_NE(ReadFile(dir_ + "/r/ac/" + key.Hex()).find("hmac-sha256"), std::string::npos);
  ASSERT_TRUE(*Client("secret")->Get(Namespace::kAc, key, dir_ + "/a"));
  EXPECT_EQ(ReadFile(dir_ + "/a"), "RECORD");
  ASSERT_TRUE(*Client("")->Get(Namespace::kAc, key, dir_ + "/b"));
  EXPECT_EQ(ReadFile(dir_ + "/b"), "RECORD");
}

TEST_F(SignedRemoteTest, ForgedOrUnsignedRecordsAreRefusedAndNotLeftAtDest) {
  Digest key = DigestOf("action");
  // An attacker with write access but not the key: unsigned record.
  ASSERT_TRUE(Client("")->Put(Namespace::kAc, key, Local("rec", "EVIL")).ok());
  auto got = Client("secret")->Get(Namespace::kAc, key, dir_ + "/a");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(fs::exists(dir_ + "/a"));
  // ... signed with another key.
  ASSERT_TRUE(Client("guess")->Put(Namespace::kAc, key, Local("rec", "EVIL")).ok());
  got = Client("secret")->Get(Namespace::kAc, key, dir_ + "/a");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(fs::exists(dir_ + "/a"));
  // ... a genuine record for another action copied under this key.
  Digest other = DigestOf("other action");
  ASSERT_TRUE(Client("secret")->Put(Namespace::kAc, other, Local("rec", "REAL")).ok());
  fs::copy_file(dir_ + "/r/ac/" + other.Hex(), dir_ + "/r/ac/" + key.Hex(),
                fs::copy_options::overwrite_existing);
  got = Client("secret")->Get(Namespace::kAc, key, dir_ + "/a");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(fs::exists(dir_ + "/a"));
}

TEST_F(SignedRemoteTest, BlobsPassThroughUnsigned) {
  Digest d = DigestOf("blob");
  ASSERT_TRUE(Client("secret")->Put(Namespace::kCas, d, Local("b", "blob")).ok());
  EXPECT_EQ(ReadFile(dir_ + "/r/cas/" + d.Hex()), "blob");
  ASSERT_TRUE(*Client("secret")->Get(Namespace::kCas, d, dir_ + "/o"));
  EXPECT_EQ(ReadFile(dir_ + "/o"), "blob");
}

}  // namespace
}  // namespace bm::cache
