#include "base/sha256.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace bm {
namespace {

// FIPS 180-4 examples.
TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(h.FinishHex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, OfFile) {
  const std::string path =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/bm_sha256_test.txt";
  std::ofstream(path) << "abc";
  EXPECT_EQ(*Sha256OfFile(path), Sha256Hex("abc"));
  std::remove(path.c_str());
  EXPECT_EQ(Sha256OfFile(path).status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace bm
