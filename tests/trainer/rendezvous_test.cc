#include "trainer/dist/rendezvous.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "tests/trainer/multi_rank.h"

namespace bm::train::dist {
namespace {

using testing::TempDir;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(RendezvousTest, AValueSetIsSeenByAnotherOpener) {
  TempDir dir;
  Result<std::unique_ptr<Rendezvous>> a = Rendezvous::Open(dir.path() + "/made", 1);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE((*a)->Set("world/nccl-id", std::string("x\0y", 3)).ok());
  Result<std::unique_ptr<Rendezvous>> b = Rendezvous::Open(dir.path() + "/made", 1);
  ASSERT_TRUE(b.ok()) << b.status().message();
  Result<std::string> got = (*b)->Get("world/nccl-id");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, std::string("x\0y", 3));
}

TEST(RendezvousTest, AKeyLeftByAnEarlierRunIsRefusedNamingTheDirectory) {
  TempDir dir;
  auto first = Rendezvous::Open(dir.path(), 1);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Set("world/arrived/0", "0").ok());
  auto second = Rendezvous::Open(dir.path(), 1);
  ASSERT_TRUE(second.ok());
  Status again = (*second)->Set("world/arrived/0", "0");
  EXPECT_EQ(again.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(again.message().find(dir.path()), std::string::npos) << again.message();
  EXPECT_NE(again.message().find("fresh"), std::string::npos) << again.message();
}

TEST(RendezvousTest, AMissingKeyTimesOutNamingIt) {
  TempDir dir;
  auto r = Rendezvous::Open(dir.path(), 0.2);
  ASSERT_TRUE(r.ok());
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> got = (*r)->Get("dp.tp0.pp0/nccl-id");
  EXPECT_LT(Seconds(start), 1.0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(got.status().message().find("dp.tp0.pp0/nccl-id"), std::string::npos);
}

TEST(RendezvousTest, ArriveNamesTheMembersThatDidNotCome) {
  TempDir dir;
  auto r = Rendezvous::Open(dir.path(), 0.2);
  ASSERT_TRUE(r.ok());
  const int members[] = {5, 7, 9};  // global ranks; this process is group rank 0
  Status s = (*r)->Arrive("dp.tp1.pp0", 0, members);
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable);
  EXPECT_NE(s.message().find("ranks 7, 9 of group 'dp.tp1.pp0'"), std::string::npos) << s.message();
  // In another group the others were there first: arrival completes.
  auto other = Rendezvous::Open(dir.path(), 0.2);
  ASSERT_TRUE((*other)->Set("dp.tp1.pp1/arrived/1", "7").ok());
  ASSERT_TRUE((*other)->Set("dp.tp1.pp1/arrived/2", "9").ok());
  EXPECT_TRUE((*r)->Arrive("dp.tp1.pp1", 0, members).ok());
}

TEST(RendezvousTest, ADirectoryThatCannotBeMadeIsAnIoError) {
  TempDir dir;
  std::ofstream(dir.path() + "/file") << "not a directory";
  Result<std::unique_ptr<Rendezvous>> r = Rendezvous::Open(dir.path() + "/file/sub", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kIo);
  EXPECT_NE(r.status().message().find("file/sub"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace bm::train::dist
