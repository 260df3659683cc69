// MemoryPlan (trainer/cuda/memory_plan.h) on the host: offsets, alignment, shared regions and
// PackUnderLimits.
// The arena itself needs a GPU (cuda_model_test plans and allocates whole models).
#include <gtest/gtest.h>

#include <optional>
#include <vector>

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
  EXPECT_TRUE(plan.PartFits(2048));   // as large as the largest part so far
  EXPECT_FALSE(plan.PartFits(2049));  // rounded up to 2304: the region would grow
  size_t d = plan.Add("small", 10);
  EXPECT_TRUE(plan.PartFits(2048 - 256));
  EXPECT_FALSE(plan.PartFits(2048 - 255));
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

// The CUDA model's activations over later gradients (cuda_model_plan.cc), with the MiB of the
// LLaMA-2-7B-width row at 2 x 4096: a layer's activations 793, its gradients 772, the untied
// embeddings' 500; layer l's must end before layer l - 1's gradients do (layer 0's before the
// embeddings' do). Seven of the eight fit; placing from the top layer down fits four.
TEST(PackUnderLimits, TakesEveryItemThatStillFits) {
  std::vector<size_t> limits;
  for (size_t l = 0; l < 8; ++l) limits.push_back(500 + l * 772);
  auto at = PackUnderLimits(0, 793, limits);
  ASSERT_EQ(at.size(), 8u);
  EXPECT_FALSE(at[0]);  // 793 > 500
  for (size_t l = 1; l < 8; ++l) {
    ASSERT_TRUE(at[l]) << l;
    EXPECT_EQ(*at[l], (l - 1) * 793) << l;
    EXPECT_LE(*at[l] + 793, limits[l]) << l;
  }
  // Small items: all of them, back to back from the start.
  at = PackUnderLimits(100, 397, limits);
  for (size_t l = 0; l < 8; ++l) EXPECT_EQ(at[l], std::optional<size_t>(100 + l * 397)) << l;
  // LLaMA 1B at 8 x 2048: 802 per layer, 196 of gradients a layer over 250: layers 3, 7, 11.
  limits.clear();
  for (size_t l = 0; l < 16; ++l) limits.push_back(250 + l * 196);
  at = PackUnderLimits(0, 802, limits);
  std::vector<size_t> placed;
  for (size_t l = 0; l < at.size(); ++l)
    if (at[l]) placed.push_back(l);
  EXPECT_EQ(placed, (std::vector<size_t>{3, 7, 11}));
  // Nothing fits: nothing placed; no limits: no items.
  for (const auto& a : PackUnderLimits(0, 10'000, limits)) EXPECT_FALSE(a);
  EXPECT_TRUE(PackUnderLimits(0, 1, {}).empty());
}

}  // namespace
}  // namespace bm::train::cuda
