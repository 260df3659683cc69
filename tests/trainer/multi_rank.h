// Multi-process tests of the communicators: RunRanks forks one process per
// rank from the test, runs a body in each and collects what each returned.
// A body reports failure as a string (RANK_CHECK, RANK_OK), since a forked
// child's gtest assertions would never reach the parent.
//
// Fork, not threads: each rank needs a process of its own, as in a real run
// (Gloo's and NCCL's per-process state, a peer that exits). The parent must
// not have touched CUDA before forking (a child cannot use CUDA then), so GPU
// tests decide to skip inside the ranks (RankResult::skip).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/dist/rank_env.h"

namespace bm::train::dist::testing {

struct RankResult {
  RankResult() = default;
  RankResult(std::string e) : error(std::move(e)) {}  // NOLINT: implicit for RANK_CHECK

  std::string error;   // empty: the rank passed
  std::string output;  // anything to compare across ranks in the parent
  std::string skip;    // non-empty: the rank could not run the test, and why
};

struct RankOutcome {
  RankResult result;
  bool returned = false;  // the body returned (false: it exited, crashed or was killed)
  int wait_status = 0;    // from waitpid
  std::string Describe() const;
};

// Runs body(rank) for rank = 0..n-1, each in a forked process. A rank still
// running after timeout_s is killed (and reported as such).
std::vector<RankOutcome> RunRanks(int n, double timeout_s,
                                  const std::function<RankResult(int rank)>& body);

// ADD_FAILURE for each rank that did not return cleanly with no error;
// true when all passed. GTEST_SKIP-worthy outcomes are the caller's to check.
bool AllRanksPassed(const std::vector<RankOutcome>& outcomes);

// A fresh directory under $TMPDIR (or /tmp), removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

RankEnv EnvOf(int rank, int world, const std::string& rendezvous, double timeout_s);

}  // namespace bm::train::dist::testing

#define RANK_CHECK(cond, ...)                                                                    \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      return fmt::format("line {}: {} is false: {}", __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)

#define RANK_OK(expr)                                                                           \
  do {                                                                                          \
    ::bm::Status rank_ok_status_ = (expr);                                                      \
    if (!rank_ok_status_.ok())                                                                  \
      return fmt::format("line {}: {} failed: {}", __LINE__, #expr, rank_ok_status_.message()); \
  } while (0)
