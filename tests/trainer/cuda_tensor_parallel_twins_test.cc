// The CUDA backend's tensor-parallel pieces on their CPU twins, so that CI
// (no GPU) proves the algorithm the kernels implement; cuda_ops_test.cc holds
// the kernels to the twins on a GPU, cuda_ranks_test.cc the whole model.
//
//   - the vocabulary-parallel cross-entropy: the logits' columns split over 3
//     simulated TP ranks (padding columns poisoned), the two all-reduces done
//     by hand between the three steps, give CrossEntropyCpu's losses on whole
//     rows and, column for column, its gradient (fp32 rounding: 1e-6);
//   - the vocabulary-parallel embedding: each rank's lookup, summed, is the
//     whole table's, and each rank's buckets hold exactly its tokens;
//   - the GPU layout of each TP rank holds 1/TP of every split tensor, and every
//     rank's GPU layout of every TPxPPy layout maps onto its trainer shard
//     exactly, the ranks' owned tensors counting every parameter once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/param_layout.h"
#include "trainer/cuda/shard_map.h"
#include "trainer/model/config.h"
#include "trainer/model/shard.h"

namespace bm::train::cuda {
namespace {

constexpr int kRanks = 3;

std::vector<float> Random(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(VocabParallelCrossEntropy, SplitRowsGiveTheWholeRowsLossAndGradient) {
  const int n = 6, vocab = 11, local = (vocab + kRanks - 1) / kRanks;  // 4, 4, 4 (last: 3 real)
  std::vector<float> logits = Random(n * vocab, 1, 3.0f);
  logits[2 * vocab + 7] = 40.0f;  // one row dominated by a single logit
  const std::vector<int> targets = {0, 5, 7, -1, 10, 4};
  const std::vector<float> weights = {1, 1, 0.5f, 1, 1, 0};
  const float grad_scale = 0.25f;
  std::vector<float> want = logits, want_losses(n);
  CrossEntropyCpu(want.data(), want_losses.data(), targets.data(), weights.data(), grad_scale, n,
                  vocab, vocab, true);

  std::vector<std::vector<float>> part(kRanks), stats(kRanks);
  for (int t = 0; t < kRanks; ++t) {
    part[t].assign(n * local, 1e4f);  // padding columns: must be ignored
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < local && t * local + i < vocab; ++i)
        part[t][r * local + i] = logits[r * vocab + t * local + i];
    stats[t].assign(4 * n, NAN);
  }
  auto real = [&](int t) { return std::clamp(vocab - t * local, 0, local); };
  for (int t = 0; t < kRanks; ++t)
    VocabParallelStatsCpu(stats[t].data(), part[t].data(), targets.data(), n, real(t), local,
                          t * local);
  for (int r = 0; r < n; ++r) {  // all-reduce (max) of stats[1]
    float m = -INFINITY;
    for (int t = 0; t < kRanks; ++t) m = std::max(m, stats[t][n + r]);
    for (int t = 0; t < kRanks; ++t) stats[t][n + r] = m;
  }
  for (int t = 0; t < kRanks; ++t) VocabParallelRescaleCpu(stats[t].data(), n);
  for (int i = 2 * n; i < 4 * n; ++i) {  // all-reduce (sum) of stats[2..3]
    float s = 0;
    for (int t = 0; t < kRanks; ++t) s += stats[t][i];
    for (int t = 0; t < kRanks; ++t) stats[t][i] = s;
  }
  for (int t = 0; t < kRanks; ++t) {
    std::vector<float> losses(n, NAN);
    VocabParallelFinishCpu(part[t].data(), losses.data(), stats[t].data(), targets.data(),
                           weights.data(), grad_scale, n, real(t), local, t * local, true);
    for (int r = 0; r < n; ++r) {
      EXPECT_NEAR(losses[r], want_losses[r], 1e-5 * std::max(1.0f, want_losses[r]))
          << "rank " << t << " row " << r;
      for (int i = 0; i < local; ++i) {
        const int id = t * local + i;
        const float got = part[t][r * local + i];
        if (id >= vocab) {
          EXPECT_EQ(got, 0.0f) << "padding column " << id;
        } else {
          EXPECT_NEAR(got, want[r * vocab + id], 1e-6) << "row " << r << " id " << id;
        }
      }
    }
  }
}

TEST(VocabParallelCrossEntropy, ARankWithOnlyPaddingAddsNothing) {
  // V = 2 over 3 ranks: the last rank's one column is padding.
  const int n = 2, vocab = 2, local = 1;
  std::vector<float> logits = {0.5f, -1.0f, 2.0f, 3.0f}, want = logits, want_losses(n);
  const std::vector<int> targets = {1, 0};
  CrossEntropyCpu(want.data(), want_losses.data(), targets.data(), nullptr, 1.0f, n, vocab, vocab,
                  false);
  std::vector<float> s(4 * n);
  std::vector<float> padding = {7.0f, 7.0f};
  VocabParallelStatsCpu(s.data(), padding.data(), targets.data(), n, 0, local, 2);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(s[r], -INFINITY);
    EXPECT_EQ(s[2 * n + r], 0.0f);
    EXPECT_EQ(s[3 * n + r], 0.0f);
  }
  s[n] = s[n + 1] = 3.0f;  // the group's maxima from the other ranks
  VocabParallelRescaleCpu(s.data(), n);
  EXPECT_EQ(s[2 * n], 0.0f);
  EXPECT_EQ(s[2 * n + 1], 0.0f);
}

TEST(VocabParallelEmbedding, RanksLookUpTheirIdsAndSumToTheWholeTable) {
  const int seq = 5, n = 2 * seq, c = 8, vocab = 10, local = 4;  // ranks: 0-3, 4-7, 8-9 (+2 pad)
  const std::vector<int> tokens = {3, 4, 9, 0, 4, 8, 7, 3, 3, 1};
  std::vector<float> wte = Random(vocab * c, 2, 1.0f), wpe = Random(seq * c, 3, 1.0f);
  std::vector<float> want(n * c), sum(n * c, 0.0f), out(n * c);
  EmbeddingForwardCpu(want.data(), tokens.data(), wte.data(), wpe.data(), n, seq, c, 0, vocab);
  std::vector<int> bucketed;
  for (int t = 0; t < kRanks; ++t) {
    std::vector<float> rows(local * c, 0.0f);
    for (int i = 0; i < local && t * local + i < vocab; ++i)
      std::copy_n(wte.data() + (t * local + i) * c, c, rows.data() + i * c);
    // Positions on the first rank only, as the model does.
    EmbeddingForwardCpu(out.data(), tokens.data(), rows.data(), t == 0 ? wpe.data() : nullptr, n,
                        seq, c, t * local, local);
    for (int i = 0; i < n * c; ++i) sum[i] += out[i];
    EmbeddingBuckets b = BuildEmbeddingBuckets(tokens.data(), n, t * local, local);
    ASSERT_EQ(b.offsets.size(), b.tokens.size() + 1);
    for (size_t k = 0; k < b.tokens.size(); ++k) {
      ASSERT_GE(b.tokens[k], 0);
      ASSERT_LT(b.tokens[k], local);
      for (int p = b.offsets[k]; p < b.offsets[k + 1]; ++p) {
        EXPECT_EQ(tokens[b.positions[p]], t * local + b.tokens[k]);
        bucketed.push_back(b.positions[p]);
      }
    }
  }
  for (int i = 0; i < n * c; ++i) EXPECT_FLOAT_EQ(sum[i], want[i]) << i;
  std::sort(bucketed.begin(), bucketed.end());
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  EXPECT_EQ(bucketed, all) << "every position in exactly one rank's buckets";
}

TEST(TensorParallelLayout, EachRankHoldsItsShareOfEverySplitTensor) {
  ModelSpec whole;
  ASSERT_TRUE(ModelPreset("tiny-llama", &whole));
  whole.heads = 4, whole.kv_heads = 2;  // grouped-query attention, both split by TP2
  whole.vocab = 1001;                   // not a multiple of TP: padded rows
  const ParamLayout all(whole);
  for (int t = 0; t < 2; ++t) {
    ModelSpec s = whole;
    s.tp = 2, s.tp_rank = t;
    const ParamLayout mine(s);
    ASSERT_EQ(mine.tensors().size(), all.tensors().size());
    for (size_t i = 0; i < all.tensors().size(); ++i) {
      const ParamTensor &a = all.tensors()[i], &m = mine.tensors()[i];
      EXPECT_EQ(m.name, a.name);
      const bool replicated = m.cols == 1 || a.name.find("norm") != std::string::npos;
      if (a.name.find("embed_tokens") != std::string::npos || a.name == "lm_head.weight")
        EXPECT_EQ(m.rows, 501) << a.name;  // ceil(1001 / 2)
      else if (replicated)
        EXPECT_EQ(m.numel(), a.numel()) << a.name;
      else
        EXPECT_EQ(2 * m.numel(), a.numel()) << a.name;
    }
    EXPECT_EQ(s.vocab_begin(), 501 * t);
    EXPECT_EQ(s.vocab_real(), t == 0 ? 501 : 500);
  }
}

// A step's first backward writes the gradients of the matrices whose products it runs and
// zeroes the rest before adding to them: on every stage of every layout, each gradient element
// is in exactly one of the two, and the embedding that a first stage only scatters into is
// zeroed (a pipeline's first stage has no LM head; before the fix its wte gradient was taken
// for the head's and grew from step to step).
TEST(TensorParallelLayout, EveryStageZeroesExactlyTheGradientsItOnlyAddsTo) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    Result<train::ModelConfig> config = train::Preset(preset);
    ASSERT_TRUE(config.ok());
    config->layers = 4;
    for (auto [tp, pp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}})
      for (int p = 0; p < pp; ++p) {
        Result<ModelShard> shard = ModelShard::Make(*config, {tp, 0, pp, p});
        ASSERT_TRUE(shard.ok()) << shard.status().message();
        const ModelSpec spec = SpecOfShard(*config, *shard);
        const ParamLayout gpu(spec);
        const std::string where = fmt::format("{} TP{} PP{} stage {}", preset, tp, pp, p);
        std::vector<int> marks(gpu.total(), 0);  // 1 written, 2 zeroed
        for (const ParamTensor& t : gpu.tensors()) {
          const bool embedding = t.name.find("wte") != std::string::npos ||
                                 t.name.find("wpe") != std::string::npos ||
                                 t.name.find("embed_tokens") != std::string::npos;
          // The head's product writes the LM head, also when it is the tied embedding.
          const bool head = spec.head && t.offset == gpu.lm_head;
          if (t.cols > 1 && (!embedding || head))
            std::fill_n(marks.begin() + static_cast<ptrdiff_t>(t.offset), t.numel(), 1);
        }
        for (const Range& r : gpu.AddedGradients())
          for (size_t i = r.offset; i < r.end(); ++i) {
            ASSERT_EQ(marks[i], 0) << where << ": element " << i << " written and zeroed";
            marks[i] = 2;
          }
        for (const ParamTensor& t : gpu.tensors())
          EXPECT_NE(marks[t.offset], 0) << where << ": " << t.name << " neither written nor zeroed";
        EXPECT_EQ(std::count(marks.begin(), marks.end(), 0), 0) << where;
        if (spec.embeddings) {  // the lookup only scatters into it unless it is the head too
          EXPECT_EQ(marks[gpu.wte], spec.head && spec.tied ? 1 : 2) << where;
        }
      }
  }
}

TEST(ShardMap, EveryRankOfEveryLayoutMapsOntoItsShardAndOwnsItsPartOnce) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    Result<train::ModelConfig> config = train::Preset(preset);
    ASSERT_TRUE(config.ok());
    config->vocab = 509;  // not a multiple of TP: padded rows
    config->layers = 4;   // PP4: a stage of the embeddings alone, one with the head
    const int64_t whole = train::ParamLayout(*config).total();
    for (auto [tp, pp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}}) {
      int64_t owned = 0;
      for (int p = 0; p < pp; ++p)
        for (int t = 0; t < tp; ++t) {
          Result<ModelShard> shard = ModelShard::Make(*config, {tp, t, pp, p});
          ASSERT_TRUE(shard.ok()) << shard.status().message();
          const ModelSpec spec = SpecOfShard(*config, *shard);
          const ParamLayout gpu(spec);
          Result<std::vector<TensorSpan>> spans = MapOntoTrainer(gpu, shard->layout());
          ASSERT_TRUE(spans.ok()) << preset << " TP" << tp << " PP" << pp << " rank (" << t << ", "
                                  << p << "): " << spans.status().message();
          for (const TensorSpan& s : *spans)
            if (shard->owns(s.host_tensor)) owned += static_cast<int64_t>(s.numel);
          const size_t units =
              (spec.embeddings ? 1 : 0) + spec.stage_layers() + (spec.head ? 1 : 0);
          EXPECT_EQ(gpu.units().size(), units) << preset << " stage " << p;
        }
      // Padding rows are owned but not in the whole model: V rounded up to TP.
      const int64_t padding =
          (tp - 509 % tp) % tp * config->hidden * (config->tied_embeddings ? 1 : 2);
      EXPECT_EQ(owned, whole + padding) << preset << " TP" << tp << " PP" << pp;
    }
  }
}

}  // namespace
}  // namespace bm::train::cuda
