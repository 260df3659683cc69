// MemoryPlan (trainer/cuda/memory_plan.h) on the host: offsets, alignment and shared regions.
// The arena itself needs a GPU (cuda_model_test plans and allocates whole models).
#include <gtest/gtest.h>

#include "trainer/cuda/memory_plan.h"

namespace bm::train::cuda {
namespace {

TEST(MemoryPlan, EntriesFollowEachOtherAligned) {
  MemoryPlan plan;
  EXPECT_EQ(plan.Add("a", 10), 0u);
  EXPECT_EQ(plan.Add("b", 256), 256u);
  EXPECT_EQ(plan.Add("c", 1), 512u);
  EXPECT_EQ(plan.total(), 768u);
}

TEST(MemoryPlan, SharedPartsStartTogetherAndTheRegionTakesTheLargest) {
  MemoryPlan plan;
  plan.Add("before", 100);  // 256
  plan.BeginShared("scratch");
  size_t a = plan.Add("layer temp", 1000);  // 1024
  size_t b = plan.Add("layer temp 2", 512);
  plan.NextPart();
  size_t c = plan.Add("head temp", 2000);  // 2048: the largest part
  plan.NextPart();
  size_t d = plan.Add("small", 10);
  plan.EndShared();
  size_t after = plan.Add("after", 10);
  EXPECT_EQ(a, 256u);
  EXPECT_EQ(b, 256u + 1024u);
  EXPECT_EQ(c, 256u);
  EXPECT_EQ(d, 256u);
  EXPECT_EQ(after, 256u + 2048u);
  EXPECT_EQ(plan.total(), 256u + 2048u + 256u);
  // A first part larger than the later ones sets the size too.
  MemoryPlan first;
  first.BeginShared("s");
  first.Add("big", 4096);
  first.NextPart();
  first.Add("small", 256);
  first.EndShared();
  EXPECT_EQ(first.total(), 4096u);
  EXPECT_NE(plan.Summary().find("head temp (shared: scratch)"), std::string::npos)
      << plan.Summary();
}

}  // namespace
}  // namespace bm::train::cuda
