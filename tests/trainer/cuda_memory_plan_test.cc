// MemoryPlan (trainer/cuda/memory_plan.h) on the host: offsets, alignment, shared regions and
// PackUnderLimits; CudaDataParallel's part of a plan (its arithmetic only, no arena), trained and
// frozen (RunSpec::frozen: LLaVA's frozen language model), and a tensor-parallel rank's at ZeRO 1-3
// over its data-parallel group, and a pipeline stage's tied units kept whole at ZeRO 2-3, against
// bytes per parameter counted by hand from cuda_data_parallel.h's table.
// The arena itself needs a GPU (cuda_model_test plans and allocates whole models).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/cuda_data_parallel.h"
#include "trainer/cuda/memory_plan.h"
#include "trainer/cuda/model_spec.h"
#include "trainer/cuda/param_layout.h"
#include "trainer/cuda/shard_map.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/config.h"
#include "trainer/model/shard.h"
#include "trainer/model/vision_config.h"

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

// The bytes CudaDataParallel plans for tiny-llama on one rank (no GPU touched: Plan is arithmetic).
size_t DataParallelBytes(int zero, DType work, bool split, bool frozen, std::string* summary,
                         size_t* params) {
  ModelSpec spec;
  EXPECT_TRUE(ModelPreset("tiny-llama", &spec));
  const ParamLayout layout(spec, CudaDataParallel::UnitAlign(frozen ? 0 : zero, 1));
  auto self = dist::MakeSelfCommunicator();
  CudaDataParallel dp(layout, self.get(), zero, work, split, frozen);
  MemoryPlan plan;
  dp.Plan(&plan);
  if (summary) *summary = plan.Summary();
  if (params) *params = layout.total();
  EXPECT_EQ(dp.local_size(), frozen ? 0 : static_cast<int64_t>(layout.total()));
  return plan.total();
}

size_t Aligned(size_t bytes) {
  return (bytes + MemoryPlan::kAlign - 1) / MemoryPlan::kAlign * MemoryPlan::kAlign;
}

// A frozen model plans its working weights and nothing else, whatever ZeRO stage was asked for
// (replicated, not sharded): fp32 4 bytes a parameter, bf16 2. A trained one at zero 0 holds, per
// parameter, AdamW m and v (4 + 4) and fp32 gradients (4) on top of its weights — fp32: the
// masters are the working weights (4); bf16: masters 4 and the 16-bit copy 2, or with split
// masters the low halves 2 and the copy 2 — plus the weight-decay mask (one bit per 64).
TEST(DataParallelPlan, AFrozenModelHoldsItsWorkingWeightsOnly) {
  std::string summary;
  size_t P = 0;
  for (int zero : {0, 1, 2, 3}) {
    const size_t fp32 = DataParallelBytes(zero, DType::kF32, false, true, &summary, &P);
    EXPECT_EQ(fp32, Aligned(P * 4)) << zero;
    EXPECT_NE(summary.find("params fp32 (frozen)"), std::string::npos) << summary;
    const size_t bf16 = DataParallelBytes(zero, DType::kBF16, true, true, &summary, &P);
    EXPECT_EQ(bf16, Aligned(P * 2)) << zero;
    EXPECT_NE(summary.find("params 16-bit (frozen)"), std::string::npos) << summary;
    for (const char* absent : {"adamw", "grads", "master", "gradient", "gathered", "mask"})
      EXPECT_EQ(summary.find(absent), std::string::npos) << absent << " in\n" << summary;
  }
  ASSERT_GT(P, 100'000u);  // tiny-llama: 512 x 128 embeddings and head, two layers
  const size_t mask = Aligned((P / 64 + 31) / 32 * 4);
  const size_t fp32 = DataParallelBytes(0, DType::kF32, false, false, &summary, &P);
  EXPECT_EQ(fp32, 4 * Aligned(P * 4) + mask) << summary;
  EXPECT_EQ(fp32 - DataParallelBytes(0, DType::kF32, false, true, nullptr, nullptr),
            3 * Aligned(P * 4) + mask);  // m, v, gradients: 12 bytes a parameter
  const size_t bf16 = DataParallelBytes(0, DType::kBF16, false, false, &summary, &P);
  EXPECT_EQ(bf16, 4 * Aligned(P * 4) + Aligned(P * 2) + mask) << summary;
  const size_t split = DataParallelBytes(0, DType::kBF16, true, false, &summary, &P);
  EXPECT_EQ(split, 3 * Aligned(P * 4) + 2 * Aligned(P * 2) + mask) << summary;
  EXPECT_EQ(split - DataParallelBytes(0, DType::kBF16, true, true, nullptr, nullptr),
            3 * Aligned(P * 4) + Aligned(P * 2) + mask);  // 14 bytes a parameter
}

// Split masters at ZeRO 1-3 (bf16) on one rank, the entries by name: the low halves replace the
// fp32 masters (4 bytes a parameter of the shard become 2; ZeRO 1-2's high halves are the 16-bit
// copy's own slices), and ZeRO 3 keeps the high halves of its own slices (2 more) in their place.
TEST(DataParallelPlan, SplitMastersAtEveryZeroStage) {
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE(zero);
    std::string whole_summary, split_summary;
    size_t P = 0;
    const size_t whole = DataParallelBytes(zero, DType::kBF16, false, false, &whole_summary, &P);
    const size_t split = DataParallelBytes(zero, DType::kBF16, true, false, &split_summary, &P);
    EXPECT_NE(whole_summary.find("master weights fp32 (own slices)"), std::string::npos);
    EXPECT_EQ(split_summary.find("master weights fp32"), std::string::npos) << split_summary;
    EXPECT_NE(split_summary.find("master weights' low halves (own slices)"), std::string::npos);
    EXPECT_EQ(split_summary.find("high halves") != std::string::npos, zero == 3) << split_summary;
    EXPECT_EQ(whole - split,
              zero == 3 ? Aligned(P * 4) - 2 * Aligned(P * 2) : Aligned(P * 4) - Aligned(P * 2));
  }
}

// LLaVA-1.5-13B's stage 1 at full size: the frozen LM's part of the plan is its bf16 weights, 2
// bytes a parameter. The LM counted by hand (Vicuna-13B: vocabulary 32000, hidden 5120, 40
// layers, MLP 13824, untied head): 2·32000·5120 + 40·(4·5120² + 3·5120·13824 + 2·5120) + 5120 =
// 13,015,864,320 parameters (the layout pads units to 64 elements): 26.0 GB frozen, where the
// trained LM at ZeRO-0 (bf16, split masters) would plan 16 bytes a parameter, 208 GB.
TEST(DataParallelPlan, Llava13bFrozenLanguageModelIsItsBf16Weights) {
  Result<LlavaConfig> c = LlavaPreset("llava-1.5-13b");
  ASSERT_TRUE(c.ok()) << c.status().message();
  Result<ModelShard> shard = ModelShard::Make(c->text, {});
  ASSERT_TRUE(shard.ok()) << shard.status().message();
  const ModelSpec spec = SpecOfShard(c->text, *shard);
  auto self = dist::MakeSelfCommunicator();
  const ParamLayout layout(spec, CudaDataParallel::UnitAlign(0, 1));
  const size_t P = layout.total();
  EXPECT_GE(P, 13'015'864'320u);
  EXPECT_LT(P, 13'015'864'320u + 64 * 50);  // at most 63 padding elements per unit
  CudaDataParallel frozen(layout, self.get(), 2, DType::kBF16, true, true);
  MemoryPlan a;
  frozen.Plan(&a);
  EXPECT_EQ(a.total(), Aligned(P * 2));
  EXPECT_NEAR(a.total() / 1e9, 26.03, 0.01);
  CudaDataParallel trained(layout, self.get(), 0, DType::kBF16, true, false);
  MemoryPlan b;
  trained.Plan(&b);
  EXPECT_GE(b.total(), 16 * P);
  EXPECT_LT(b.total(), 16 * P + (P / 64 / 8) + 4096);  // and the decay mask, a bit per 64
}

// The bytes CudaDataParallel plans for TP rank 0 of `preset` (with `overrides`) split TP ways,
// at `zero` over a data-parallel group of `dp` ranks (split masters asked for: bf16 takes them).
size_t TensorParallelRankBytes(const char* preset, const nlohmann::json& overrides, int tp, int dp,
                               int zero, DType work, size_t* params,
                               const std::function<void(CudaDataParallel&)>& configure = {}) {
  Result<ModelConfig> config = Preset(preset);
  EXPECT_TRUE(config.ok()) << preset;
  config = ApplyOverrides(*config, overrides);
  EXPECT_TRUE(config.ok()) << config.status().message();
  Result<ModelShard> shard = ModelShard::Make(*config, {tp, 0, 1, 0});
  EXPECT_TRUE(shard.ok()) << shard.status().message();
  const ModelSpec spec = SpecOfShard(*config, *shard);
  const ParamLayout layout(spec, CudaDataParallel::UnitAlign(zero, dp));
  testing::PlanOnlyGroup group(dp, 0);
  CudaDataParallel dp_state(layout, &group, zero, work, /*split_masters=*/true);
  if (configure) configure(dp_state);
  MemoryPlan plan;
  dp_state.Plan(&plan);
  if (params) *params = layout.total();
  return plan.total();
}

// llama-tiny at 8 layers (cuda_ranks_test.cc's TensorParallelZero3HoldsLessThanZero1 runs it on
// the GPU, fp32, TP2PP1DP2), TP rank 0's shard counted by hand: heads 2 of 4, kv_heads 1 of 2
// (head size 16), ffn 80 of 160, vocabulary rows 256 of 512, width 64; units padded to 128
// elements (64 x 2 ranks).
//   embeddings: wte 256·64                                              = 16,384
//   a layer: qkv (2+1+1)·16·64 + o 64·32 + gate|up 160·64 + down 64·80 + 2 norms 64
//            = 4096 + 2048 + 10,240 + 5120 + 128                        = 21,632
//   final: lm_head 256·64 + norm 64 = 16,448, padded                    = 16,512
//   P = 16,384 + 8 · 21,632 + 16,512 = 205,952;  own slices L = P / 2   = 102,976
// fp32 floats: ZeRO-1 masters, m, v (3L) + the working copy and the gradients (2P) = 720,832;
// ZeRO-3 masters, m, v (3L) + two unit slots (2 · 21,632) + gradient slices (L) + reduce-scatter
// scratch (a layer's slice, 10,816) + two gradient buckets (2 · 21,632) = 509,248 — the untied
// embeddings (16,384) in the rings' slots (FirstUnitUsedAlone, as CudaModel asks for LLaMA) —
// so 846,336 bytes fewer (every entry a multiple of 256 bytes); with slots of their own, a
// gathered and a bucket one, 542,016 and 715,264.
TEST(DataParallelPlan, TensorParallelZero3HoldsLessThanZero1CountedByHand) {
  const nlohmann::json layers = {{"layers", 8}};
  const auto alone = [](CudaDataParallel& d) { d.FirstUnitUsedAlone(); };
  size_t P = 0;
  const size_t z1 = TensorParallelRankBytes("llama-tiny", layers, 2, 2, 1, DType::kF32, &P, alone);
  EXPECT_EQ(P, 205'952u);
  EXPECT_EQ(z1, 720'832u * 4);
  const size_t z3 = TensorParallelRankBytes("llama-tiny", layers, 2, 2, 3, DType::kF32, &P, alone);
  EXPECT_EQ(P, 205'952u);
  EXPECT_EQ(z3, 509'248u * 4);
  EXPECT_EQ(z1 - z3, 846'336u);
  EXPECT_EQ(TensorParallelRankBytes("llama-tiny", layers, 2, 2, 3, DType::kF32, &P), 542'016u * 4);
}

// The gpt3_paddle example's TP2PP1SH2SP4 rows (gpt3-6.7b, vocabulary padded to 50,304, TP2 over
// DP4, 16-bit weights): TP rank 0's shard counted by hand (width 4096, 32 layers, MLP 16,384):
//   embeddings: wte 25,152·4096 + wpe 2048·4096                        = 111,411,200
//   a layer: qkv 6144·4096 + 6144, proj 4096·2048 + 4096, fc 8192·4096 + 8192,
//            fc2 4096·8192 + 4096, two LayerNorms 2·2·4096             = 100,702,208
//   final: LayerNorm 2·4096 (the head is wte, tied)                     = 8192
//   P = 111,411,200 + 32 · 100,702,208 + 8192 = 3,333,890,048 (every unit a multiple of 256:
//   no padding); L = P / 4.
// Bytes: ZeRO-1 masters, m and v 12 L + 16-bit copy 2 P + gradients 4 P = 9 P = 30.0 GB.
// ZeRO-2: 12 L + 2 P + gradient slices 4 L + reduce-scatter scratch (the widest slice, the
// embeddings': E / 4 floats) + buckets 4 · (E + 2 W) = 6 P + 5 E + 8 W = 21.4 GB. ZeRO-3 (no
// 16-bit copy of the own slices: cast when gathered): 12 L + gathered units 2 · (E + 2 W) + 4 L +
// scratch + buckets = 4 P + 7 E + 12 W = 15.3 GB.
TEST(DataParallelPlan, Gpt3TensorParallelZeroStagesCountedByHand) {
  const nlohmann::json vocab = {{"vocab", 50304}};
  const size_t P = 3'333'890'048, E = 111'411'200, W = 100'702'208;
  size_t params = 0;
  const size_t z1 = TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 1, DType::kF16, &params);
  EXPECT_EQ(params, P);
  EXPECT_EQ(z1, 9 * P);
  const size_t z2 = TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 2, DType::kF16, &params);
  EXPECT_EQ(z2, 6 * P + 5 * E + 8 * W);
  const size_t z3 = TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 3, DType::kF16, &params);
  EXPECT_EQ(z3, 4 * P + 7 * E + 12 * W);
  EXPECT_NEAR(z1 / 1e9, 30.01, 0.01);
  EXPECT_NEAR(z2 / 1e9, 21.37, 0.01);
  EXPECT_NEAR(z3 / 1e9, 15.32, 0.01);
  // bf16 with split masters: the fp32 masters' 4 L become low halves of 2 L beside the 16-bit
  // copy's own slices at ZeRO 1-2 (P / 2 bytes fewer at DP4); at ZeRO 3 low and high halves,
  // 2 L each, where the masters were.
  EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 1, DType::kBF16, nullptr),
            9 * P - P / 2);
  EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 2, DType::kBF16, nullptr),
            6 * P + 5 * E + 8 * W - P / 2);
  EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, 4, 3, DType::kBF16, nullptr),
            4 * P + 7 * E + 12 * W);
}

// The same rows' TP rank 0 with the gradients summed in bf16 (ReduceInBf16): a staging buffer of
// the widest unit (the embeddings', E elements) in bf16, 2 E bytes, at every stage; at ZeRO 2-3
// no fp32 reduce-scatter scratch (E / 4 floats, E bytes), since the bf16 sums are added from the
// staging. One micro-batch a step (OneMicroBatchPerStep) drops that scratch alone; with bf16 work
// as well, the staging is doubled (below).
TEST(DataParallelPlan, Bf16SumsStageTheWidestUnitCountedByHand) {
  const nlohmann::json vocab = {{"vocab", 50304}};
  const size_t E = 111'411'200;
  const auto bf16 = [](CudaDataParallel& d) { d.ReduceInBf16(); };
  const auto one_micro = [](CudaDataParallel& d) { d.OneMicroBatchPerStep(); };
  for (int zero : {0, 1, 2, 3}) {
    SCOPED_TRACE(zero);
    const int dp = zero == 0 ? 1 : 4;  // (zero 0 over DP4 would keep 4 x the state)
    const size_t fp32 =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr);
    const size_t with =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr, bf16);
    EXPECT_EQ(with, fp32 + 2 * E - (zero >= 2 ? E : 0));
    const size_t one =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr, one_micro);
    EXPECT_EQ(one, fp32 - (zero >= 2 ? E : 0));
    // With bf16 work and one micro-batch a step the backward writes the matrices' gradients in
    // bf16 straight into the staging (CudaDataParallel::GradBf16): a second staging buffer, 2 E
    // more; at ZeRO 2-3 (fresh buckets every micro-batch) with accumulation too. fp16 work keeps
    // the one (its products write fp32).
    const auto both = [](CudaDataParallel& d) {
      d.ReduceInBf16();
      d.OneMicroBatchPerStep();
    };
    const size_t bf16_one =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, one_micro);
    EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, both),
              bf16_one + 4 * E);
    EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr, both),
              one + 2 * E);
    const size_t bf16_plain =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr);
    EXPECT_EQ(TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, bf16),
              bf16_plain + (zero >= 2 ? 4 * E - E : 2 * E));
    // The norm's squares summed as the bf16 sums are widened (SumSquaresAsReduced): 512 floats
    // for each of the 34 units (the embeddings, 32 layers, the final unit), 69,632 bytes; with
    // fp32 sums nothing.
    const auto squares = [](CudaDataParallel& d) { d.SumSquaresAsReduced(); };
    const auto bf16_squares = [](CudaDataParallel& d) {
      d.ReduceInBf16();
      d.SumSquaresAsReduced();
    };
    EXPECT_EQ(
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, squares),
        bf16_plain);
    EXPECT_EQ(
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr,
                                bf16_squares),
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, bf16) +
            34 * 512 * 4);
  }
}

// The bf16 sums kept (CudaDataParallel::keeps_bf16_sums: bf16 work and sums, one micro-batch a
// step, the norm summed as reduced), the same GPT-3 6.7B TP2 rank (E = 111,411,200 the
// embeddings, W = 100,702,208 a layer, P = 3,333,890,048, L = P / 4 on DP4), against the same
// without the norm's squares (whose sums are widened into fp32). The fp32 gradients become the
// unit buckets at every stage (zero 2-3 have them already: the embeddings' 4 E, two rings of 4
// W) and the reduced sums a bf16 buffer of the own slices: zero 0 drops the whole fp32 gradients
// (4 P) and, writing its sums' place directly, both stagings (2 · 2 E) for 2 P of sums and the
// buckets; zero 1 drops 4 P for 2 L and the buckets; zero 2-3 hold their slices in 2 L bytes
// rather than 4 L. Each adds the squares' 34 · 512 floats.
TEST(DataParallelPlan, KeptBf16SumsCountedByHand) {
  const nlohmann::json vocab = {{"vocab", 50304}};
  const size_t E = 111'411'200, W = 100'702'208, P = 3'333'890'048, L = P / 4;
  const size_t squares = 34 * 512 * 4, buckets = 4 * E + 2 * 4 * W;
  const auto widened = [](CudaDataParallel& d) {
    d.ReduceInBf16();
    d.OneMicroBatchPerStep();
  };
  const auto kept = [](CudaDataParallel& d) {
    d.ReduceInBf16();
    d.OneMicroBatchPerStep();
    d.SumSquaresAsReduced();
  };
  for (int zero : {0, 1, 2, 3}) {
    SCOPED_TRACE(zero);
    const int dp = zero == 0 ? 1 : 4;
    size_t params = 0;
    const size_t before =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, &params, widened);
    ASSERT_EQ(params, P);
    const size_t after =
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kBF16, nullptr, kept);
    const size_t want = zero == 0   ? before - 4 * P - 2 * 2 * E + 2 * P + buckets + squares
                        : zero == 1 ? before - 4 * P + 2 * L + buckets + squares
                                    : before - 4 * L + 2 * L + squares;
    EXPECT_EQ(after, want);
    // fp16 work writes no bf16 gradients: nothing is kept (the widened plan and the squares).
    EXPECT_EQ(
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr, kept),
        TensorParallelRankBytes("gpt3-6.7b", vocab, 2, dp, zero, DType::kF16, nullptr, widened) +
            squares);
  }
}

// The untied embeddings reduced as rows (FirstUnitAsRows) with the bf16 sums kept: every rank's
// segment of 4096 tokens (4 bytes each) and 4096 bf16 rows of 4096, LLaMA-2-7B on DP4, counted
// by hand: 4 · 4096 · (4 + 2 · 4096) bytes more, at every stage; without the sums kept (no
// squares summed as reduced), nothing.
TEST(DataParallelPlan, FirstUnitAsRowsHoldsEveryRanksRowsCountedByHand) {
  for (int zero : {0, 1, 2, 3}) {
    SCOPED_TRACE(zero);
    const auto bytes = [&](bool kept, bool as_rows) {
      return TensorParallelRankBytes("llama2-7b", {}, 1, 4, zero, DType::kBF16, nullptr,
                                     [&](CudaDataParallel& d) {
                                       d.ReduceInBf16();
                                       d.OneMicroBatchPerStep();
                                       if (kept) d.SumSquaresAsReduced();
                                       d.FirstUnitUsedAlone();
                                       if (as_rows) d.FirstUnitAsRows(4096, 4096);
                                     });
    };
    EXPECT_EQ(bytes(true, true) - bytes(true, false), 4u * 4096 * (4 + 2 * 4096));
    EXPECT_EQ(bytes(false, true), bytes(false, false));
  }
}

// The embeddings' unit used alone (FirstUnitUsedAlone: an untied head, or a stage without the
// head) takes the rings' slot 0 at ZeRO 2-3 where that holds less. LLaMA-2-7B on DP4, bf16,
// counted by hand: E = 32000·4096 = 131,072,000 embedding elements, the widest other unit a
// layer, 4·4096² + 3·4096·11,008 + 2·4096 = 202,383,360 (both multiples of 256: no padding).
// E is smaller: ZeRO-3 drops the embeddings' gathered slot (2 E bytes) and gradient bucket
// (4 E), ZeRO-2 the bucket, ZeRO-1 has neither. Pipeline stage 0 of llama-tiny over PP2 (width
// 64, one layer of 43,136 elements, so 2 W = 86,272; DP2 pads units to 128): at vocabulary 1024
// (E = 65,536) the rings grow to E and hold 2 E in place of E + 2 W, (2 W - E) · 6 bytes fewer;
// at 4096 (E = 262,144 > 2 W) nothing changes.
TEST(DataParallelPlan, FirstUnitUsedAloneTakesTheRingsSlot) {
  const auto alone = [](CudaDataParallel& d) { d.FirstUnitUsedAlone(); };
  const size_t E = 131'072'000;
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE(zero);
    const size_t apart =
        TensorParallelRankBytes("llama2-7b", {}, 1, 4, zero, DType::kBF16, nullptr);
    const size_t ring =
        TensorParallelRankBytes("llama2-7b", {}, 1, 4, zero, DType::kBF16, nullptr, alone);
    EXPECT_EQ(apart - ring, zero == 3 ? 6 * E : zero == 2 ? 4 * E : 0);
  }
  for (int vocab : {1024, 4096}) {
    SCOPED_TRACE(vocab);
    Result<ModelConfig> config = ApplyOverrides(*Preset("llama-tiny"), {{"vocab", vocab}});
    ASSERT_TRUE(config.ok());
    Result<ModelShard> shard = ModelShard::Make(*config, {1, 0, 2, 0});
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    const ModelSpec spec = SpecOfShard(*config, *shard);
    const ParamLayout layout(spec, CudaDataParallel::UnitAlign(3, 2));
    ASSERT_EQ(layout.units().size(), 2u);
    ASSERT_EQ(layout.units()[1].numel, 43'136u);
    size_t bytes[2];
    for (bool first_alone : {false, true}) {
      testing::PlanOnlyGroup group(2, 0);
      CudaDataParallel dp(layout, &group, 3, DType::kBF16, true);
      if (first_alone) dp.FirstUnitUsedAlone();
      MemoryPlan plan;
      dp.Plan(&plan);
      bytes[first_alone] = plan.total();
    }
    EXPECT_EQ(bytes[0] - bytes[1], vocab == 1024 ? (2 * 43'136u - 65'536u) * 6 : 0u);
  }
}

// ZeRO-3's kept units (KeepGatheredLast), LLaMA-2-7B on DP4, bf16, the first unit used alone,
// counted by hand: E = 131,072,000 embedding elements, a layer W = 202,383,360, the final norm
// and head H = 4096 + 131,072,000 = 131,076,096 (all multiples of 256: no padding). Each kept
// unit gets a gathered slot of its own, 2 bytes an element: H + W keeps the head and the last
// layer (2 (H + W) bytes), one parameter less only the head (2 H); 10^12 keeps every unit but the
// embeddings (2 (32 W + H)), and the ring then holds only the embeddings: its two slots shrink
// from W to E elements (4 W - 4 E bytes fewer). At ZeRO 2 nothing changes.
TEST(DataParallelPlan, ZeroThreeKeptUnitsHaveSlotsOfTheirOwnCountedByHand) {
  const size_t E = 131'072'000, W = 202'383'360, H = 131'076'096;
  const auto keeping = [](int64_t params) {
    return [params](CudaDataParallel& d) {
      d.FirstUnitUsedAlone();
      d.KeepGatheredLast(params);
    };
  };
  const auto bytes = [&](int zero, int64_t keep) {
    return TensorParallelRankBytes("llama2-7b", {}, 1, 4, zero, DType::kBF16, nullptr,
                                   keeping(keep));
  };
  const size_t none = bytes(3, 0);
  EXPECT_EQ(bytes(3, H + W) - none, 2 * (H + W));
  EXPECT_EQ(bytes(3, H + W - 1) - none, 2 * H);
  EXPECT_EQ(bytes(3, 1'000'000'000'000) - none, 2 * (32 * W + H) - (4 * W - 4 * E));
  EXPECT_EQ(bytes(3, H - 1), none);  // not even the head fits
  EXPECT_EQ(bytes(2, 1'000'000'000'000), bytes(2, 0));
}

// Pipeline stages with tied embeddings (gpt-tiny: vocabulary 512, width 64, 2 layers, positions
// 64; PP2 over DP2) at ZeRO 2-3: the units holding the tied copy keep a whole fp32 gradient through
// the step (SumWhole; reduced after the stages' exchange), on top of what the stage plans anyway;
// counted by hand:
//   stage 0, the embeddings' unit: wte 512·64 + wpe 64·64              = 36,864 floats
//   stage 1, the final unit: lm_head (wte's copy) 512·64 + ln_f 2·64    = 32,896 floats
// (both multiples of 128, the units' alignment over two ranks). ZeRO-1 all-reduces those units
// in place instead: nothing more.
TEST(DataParallelPlan, PipelineStagesKeepTheTiedUnitsWholeAtZero2And3) {
  Result<ModelConfig> config = Preset("gpt-tiny");
  ASSERT_TRUE(config.ok());
  for (int stage : {0, 1}) {
    Result<ModelShard> shard = ModelShard::Make(*config, {1, 0, 2, stage});
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    const ModelSpec spec = SpecOfShard(*config, *shard);
    for (int zero : {1, 2, 3}) {
      const ParamLayout layout(spec, CudaDataParallel::UnitAlign(zero, 2));
      const Range tied = {stage == 0 ? layout.wte : layout.lm_head, 512u * 64u, false};
      size_t bytes[2] = {0, 0};
      std::string summary;
      for (bool whole : {false, true}) {
        testing::PlanOnlyGroup group(2, 0);
        CudaDataParallel dp(layout, &group, zero, DType::kF32);
        if (whole) dp.SumWhole(tied);
        MemoryPlan plan;
        dp.Plan(&plan);
        bytes[whole] = plan.total();
        summary = plan.Summary();
      }
      const size_t expected = zero == 1 ? 0 : (stage == 0 ? 36'864u : 32'896u) * 4;
      EXPECT_EQ(bytes[1] - bytes[0], expected) << "stage " << stage << " zero " << zero;
      EXPECT_EQ(summary.find("tied units' gradients") != std::string::npos, zero >= 2) << summary;
    }
  }
}

}  // namespace
}  // namespace bm::train::cuda
