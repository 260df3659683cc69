// The data order the PyTorch peer reads (examples/tools/align_data.py, its docstring says what
// benchmake-train does) is the trainer's own: for several steps and rows, on a dataset of
// sequences of uneven sizes (windows cross sequence boundaries), the Python module prints the
// tokens SampleTrainBatch puts in each row, and data-parallel ranks' rows are the rows the module
// names for them. The module's own SplitMix64 and ours both give the reference generator's
// first output for seed 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "tests/trainer/test_data.h"
#include "trainer/data/batch.h"
#include "trainer/rng.h"

namespace bm::train {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("BENCHMAKE_SOURCE_DIR");
  return dir ? dir : BENCHMAKE_TEST_SOURCE_DIR;
}

bool HavePython() { return std::system("python3 -c pass > /dev/null 2>&1") == 0; }

// stdout of `cmd`, and its exit status.
std::pair<std::string, int> Capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {"", -1};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

class DataOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython())
      GTEST_SKIP() << "no python3 on this machine: the peer's data order is "
                      "checked where there is one";
    dir_ = testing::TempDir("data_order");
    // 23 sequences of 5..71 tokens; token values count up, so a window names its start.
    std::vector<std::vector<int32_t>> docs;
    int32_t next = 0;
    for (int d = 0; d < 23; ++d) {
      std::vector<int32_t> doc;
      for (int i = 0; i < 5 + (d * 37) % 67; ++i) doc.push_back(next++ % 60000);
      docs.push_back(doc);
    }
    testing::WriteSplit(dir_, "train", docs);
    testing::WriteStats(dir_, 60000, 0);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The module's windows: "step row tok_0 .. tok_T" per line.
  std::vector<std::string> PeerWindows(uint64_t seed, int64_t T, const std::string& steps,
                                       const std::string& rows) {
    auto [out, status] =
        Capture("python3 '" + SourceDir() + "/examples/tools/align_data.py' " + "windows '" + dir_ +
                "' --seed " + std::to_string(seed) + " --mpe " + std::to_string(T) + " --steps " +
                steps + " --rows " + rows);
    EXPECT_EQ(status, 0) << out;
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  static std::string Line(int64_t step, int64_t row, const Batch& b, int64_t r) {
    std::string s = std::to_string(step) + " " + std::to_string(row);
    for (int64_t t = 0; t < b.T; ++t) s += " " + std::to_string(b.inputs[r * b.T + t]);
    return s + " " + std::to_string(b.targets[r * b.T + b.T - 1]);
  }

  std::string dir_;
};

TEST_F(DataOrderTest, ThePeersWindowsAreTheTrainersRows) {
  Result<TokenData> data = TokenData::Open(dir_, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  constexpr int64_t T = 16;
  for (uint64_t seed : {1234ull, 7ull}) {
    std::vector<std::string> peer = PeerWindows(seed, T, "1,2,3,520", "0-7");
    ASSERT_EQ(peer.size(), 32u);
    size_t k = 0;
    for (int64_t step : {1, 2, 3, 520}) {
      Batch b;
      ASSERT_TRUE(SampleTrainBatch(*data, seed, step, 0, 8, T, &b).ok());
      for (int64_t row = 0; row < 8; ++row) EXPECT_EQ(peer[k++], Line(step, row, b, row));
    }
  }
}

// Data parallel, as the trainer's loop asks: micro-batch g of rank r is rows (g·DP + r)·LBS...;
// DP 2, LBS 3, GAS 2: rank 1's second micro-batch holds rows 9, 10, 11.
TEST_F(DataOrderTest, ARanksMicroBatchHoldsTheRowsThePeerGivesIt) {
  Result<TokenData> data = TokenData::Open(dir_, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  constexpr int64_t T = 8, kLbs = 3, kDp = 2;
  const int64_t g = 1, r = 1;
  Batch b;
  ASSERT_TRUE(SampleTrainBatch(*data, 1234, 5, (g * kDp + r) * kLbs, kLbs, T, &b).ok());
  std::vector<std::string> peer = PeerWindows(1234, T, "5", "9-11");
  ASSERT_EQ(peer.size(), 3u);
  for (int64_t i = 0; i < kLbs; ++i) EXPECT_EQ(peer[i], Line(5, 9 + i, b, i));
  // Another seed's rows differ: the comparison can fail.
  std::vector<std::string> other = PeerWindows(99, T, "5", "9-11");
  EXPECT_NE(other[0], Line(5, 9, b, 0));
}

TEST_F(DataOrderTest, SplitMixIsTheReferenceGenerator) {
  EXPECT_EQ(SplitMix64(0), 0xE220A8397B1DCDAFull);  // splitmix64.c seeded with 0: first output
  auto [out, status] =
      Capture("python3 '" + SourceDir() + "/examples/tools/align_data.py' selftest");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("0xe220a8397b1dcdaf"), std::string::npos) << out;
}

}  // namespace
}  // namespace bm::train
