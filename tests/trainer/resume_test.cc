// Resume checkpoints (trainer/checkpoint/resume.h): a damaged one is an error, never a crash.
#include "trainer/checkpoint/resume.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/safetensors.h"

namespace bm::train {
namespace {

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::TempDir("resume"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A checkpoint of one rank after step 6, its state four floats.
  void Save() {
    ResumeState state;
    state.step = 6;
    state.params = {1, 2, 3, 4};
    state.m = {0.1f, 0.2f, 0.3f, 0.4f};
    state.v = {0.01f, 0.02f, 0.03f, 0.04f};
    ASSERT_TRUE(SaveResumeRank(dir_, who_, state).ok());
    ASSERT_TRUE(CommitResume(dir_, who_, "fp", state).ok());
  }

  std::string dir_;
  const ResumeRank who_{0, 1, false};
};

TEST_F(ResumeTest, ACheckpointReadsBack) {
  Save();
  Result<std::optional<ResumeState>> r = LoadResume(dir_, who_, "fp", 4, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->step, 6);
  EXPECT_EQ((*r)->params, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ((*r)->v[3], 0.04f);
}

// resume.h: "Errors: kCorrupt for a damaged checkpoint". A state.json that is JSON of another
// shape threw nlohmann's type_error out of the trainer (abort, exit 134) before.
TEST_F(ResumeTest, AStateJsonOfAnotherShapeIsCorruptNamingTheFile) {
  const std::string state = dir_ + "/step-00000006/state.json";
  for (const char* text :
       {R"([1])", R"({"format": 5})", R"({"format": "benchmake-resume", "version": "2"})",
        R"({"format": "benchmake-resume", "version": 2, "fingerprint": "fp",
                               "ranks": 1, "sharded": false, "step": "6"})",
        R"({"format": "benchmake-resume", "version": 2, "fingerprint": "fp",
                               "ranks": "1", "sharded": false, "step": 6})",
        R"({"format": "benchmake-resume", "version": 2, "fingerprint": "fp",
                               "ranks": 1, "sharded": false, "step": 6, "log": [5]})",
        R"({"format": "benchmake-resume", "version": 2, "fingerprint": "fp",
                               "ranks": 1, "sharded": false, "step": 6,
                               "log": [{"step": "1"}]})"}) {
    Save();
    ASSERT_TRUE(WriteFileAtomically(state, text).ok());
    Result<std::optional<ResumeState>> r = LoadResume(dir_, who_, "fp", 4, nullptr);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt) << r.status().message();
    EXPECT_NE(r.status().message().find(state), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace bm::train
