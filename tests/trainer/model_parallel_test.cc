// Tensor and pipeline parallelism on the CPU backend, proven as data
// parallelism was (data_parallel_test.cc): benchmake-train processes in the
// layouts the issue names — TP2, PP2, TP2PP2, TP2PP1DP2, TP1PP2DP2 (ZeRO-1),
// TP2PP1DP2, TP1PP2DP2 and TP2PP2DP2 with ZeRO-2 and ZeRO-3, and TP2 and TP2PP2
// with sequence parallelism —
// train a tiny GPT (tied embeddings) and a tiny GQA LLaMA (heads 4, kv_heads
// 2) with GAS 4 and a loss mask for 20 steps, against one process over the
// same global batch.
//
// What may differ, and by how much. Pipeline stages compute every parameter's
// gradient with the very operations of one process, in the same micro-batch
// order; only sums that span stages change their grouping: the global
// gradient norm (fp64 partial sums per stage) and, with tied embeddings, the
// token embedding's gradient (first stage's part + last stage's part instead
// of one accumulation). So a pipeline without clipping, untied (LLaMA), is
// bit-identical — tested below — and otherwise the clipping factor moves in
// its last bits. Tensor parallelism changes the order of fp32 sums: each
// row-parallel matmul sums its inner dimension in TP partial products plus an
// all-reduce, the vocabulary-parallel softmax sums its exponentials in TP
// parts, the column-parallel input gradients likewise — each ~k·2^-24
// relative for k terms (~1e-7..1e-6 here), the same kind and size of
// difference as data parallelism's reduction order. Through 20 AdamW steps at
// lr 3e-3 that gives ~1e-5 in weights (data_parallel_test.cc derives it), so
// the same bounds hold: 1e-4 relative on each step's loss, 1e-4 absolute on
// weights (5e-3 of a 0.02-std weight). A missing all-reduce, a wrong slice, a
// doubled tied gradient or a norm counting a replicated tensor twice moves
// losses by >1e-3 within a few steps (the first test checks that other rows do).
#include <gtest/gtest.h>

#include "tests/trainer/train_ranks.h"

namespace bm::train {
namespace {

using nlohmann::json;

constexpr double kLossTol = 1e-4, kWeightTol = 1e-4;
constexpr int kGas = 4, kRows = 4;  // rows per micro-batch of the global batch

class ModelParallelTest : public testing::TrainRanksTest {
 protected:
  // `layout` over the global batch of kRows x kGas rows per step.
  json Config(const std::string& name, const std::string& preset, const std::string& layout,
              int zero = 0) const {
    Result<ParallelLayout> l = ParseLayout(layout);
    EXPECT_TRUE(l.ok());
    return TrainRanksTest::Config(name, preset, layout, kRows / l->dp, kGas, zero);
  }

  void CheckEveryLayout(const std::string& preset) {
    RunOk(Config("single", preset, "TP1PP1DP1"));
    std::vector<testing::LayoutCase> cases = testing::ModelParallelLayouts();
    cases.insert(cases.end(), {{"TP2PP1DP1", 0, true}, {"TP2PP2DP1", 0, true}});
    for (const testing::LayoutCase& c : cases) {
      const std::string layout = c.Name();
      json config = Config(layout, preset, c.layout, c.zero);
      config["sequence_parallel"] = c.sequence_parallel;
      RunOk(config);
      // With the global gradient norm (> 1 on every step here, so clipping acts on every
      // update): every parameter counted once, whatever the layout.
      ExpectMatches(preset, layout, "single", kLossTol, kWeightTol);
      json m = Metrics(layout);
      ParallelLayout l = *ParseLayout(c.layout);
      EXPECT_EQ(m["config"]["sequence_parallel"], c.sequence_parallel) << layout;
      // Sequence parallelism keeps 1/TP of the residual stream and the norms' statistics.
      if (c.sequence_parallel) {
        EXPECT_LT(m["memory"]["peak_bytes"].get<double>(),
                  Metrics(c.layout)["memory"]["peak_bytes"].get<double>())
            << layout;
      }
      EXPECT_EQ(m["config"]["gbs"], kRows * kGas) << layout;
      EXPECT_EQ(m["parallel"]["world_size"], l.tp * l.pp * l.dp) << layout;
      EXPECT_EQ(m["parallel"]["tp"], l.tp) << layout;
      EXPECT_EQ(m["parallel"]["pp"], l.pp) << layout;
      EXPECT_DOUBLE_EQ(m["parallel"]["pipeline_bubble"].get<double>(),
                       (l.pp - 1.0) / (kGas + l.pp - 1.0))
          << layout;
      EXPECT_EQ(m["parallel"]["pipeline_wait_s"].get<double>() > 0, l.pp > 1) << layout;
    }
  }
};

TEST_F(ModelParallelTest, GptMatchesOneProcessInEveryLayout) {
  CheckEveryLayout("gpt-tiny");
  // The check can fail: other rows (another seed) move far beyond it.
  json other = Config("other", "gpt-tiny", "TP2PP2DP1");
  other["seed"] = 8;
  RunOk(other);
  auto [loss, weight] = Distance("other", "single");
  EXPECT_GT(loss, 100 * kLossTol);
  EXPECT_GT(weight, 10 * kWeightTol);
}

TEST_F(ModelParallelTest, GqaLlamaMatchesOneProcessInEveryLayout) {
  CheckEveryLayout("llama-tiny");
}

// Untied and unclipped, a pipeline computes exactly what one process does.
TEST_F(ModelParallelTest, PipelineStagesChangeNoBitWithoutClipping) {
  json single = Config("single", "llama-tiny", "TP1PP1DP1"),
       pp2 = Config("pp2", "llama-tiny", "PP2");
  single["grad_clip"] = pp2["grad_clip"] = 0.0;
  RunOk(single);
  RunOk(pp2);
  EXPECT_EQ(Losses("pp2"), Losses("single"));
  EXPECT_EQ(Weights("pp2"), Weights("single"));
}

// A TP2PP2 run killed after a checkpoint resumes to the uninterrupted run's
// bits: every rank keeps its own shard of the state.
TEST_F(ModelParallelTest, KilledTp2Pp2RunResumesBitForBit) {
  json full = Config("full", "gpt-tiny", "TP2PP2");
  full["steps"] = 24;
  full["checkpoint_every"] = 8;
  ExpectKilledRunResumesBitForBit(full);
}

// The same with ZeRO-2 and ZeRO-3 over each stage's data-parallel group (GPT:
// the tied embedding's two copies, each sharded its own way): every rank's
// local state (its slices of the master parameters and moments) comes back.
TEST_F(ModelParallelTest, KilledTp1Pp2Dp2ZeroTwoRunResumesBitForBit) {
  json full = Config("full", "gpt-tiny", "TP1PP2DP2", 2);
  full["steps"] = 24;
  full["checkpoint_every"] = 8;
  ExpectKilledRunResumesBitForBit(full);
}

TEST_F(ModelParallelTest, KilledTp2Pp2Dp2ZeroThreeRunResumesBitForBit) {
  json full = Config("full", "gpt-tiny", "TP2PP2DP2", 3);
  full["steps"] = 24;
  full["checkpoint_every"] = 8;
  ExpectKilledRunResumesBitForBit(full);
}

// ZeRO-3 keeping each stage's last units gathered through the step (zero3_keep_params) on a
// pipeline (several micro-batches' forwards before their backwards) with GPT's tied embedding:
// the bits of gathering them again, and a killed run resumes to them (the kept units are
// gathered afresh from the restored shards).
TEST_F(ModelParallelTest, ZeroThreeKeptUnitsOnAPipelineChangeNoBitAndResume) {
  json plain = Config("z3", "gpt-tiny", "TP1PP2DP2", 3);
  RunOk(plain);
  json kept = Config("full", "gpt-tiny", "TP1PP2DP2", 3);
  kept["zero3_keep_params"] = 1000000000;
  kept["checkpoint_every"] = 4;
  ExpectKilledRunResumesBitForBit(kept);
  EXPECT_EQ(Losses("full"), Losses("z3"));
  EXPECT_EQ(Weights("full"), Weights("z3"));
}

// The checkpoint is one whole model whatever the layout: a TP2PP2 finetune
// starts from a one-process pretrain and a one-process finetune from a TP2PP2
// pretrain, each matching the run on the other layout.
TEST_F(ModelParallelTest, CheckpointsInitializeAnyLayout) {
  ExpectCheckpointsInitializeAnyLayout(
      [&](const std::string& name, const std::string& layout) {
        return Config(name, "llama-tiny", layout);
      },
      kLossTol, kWeightTol);
}

// Grouped-query attention splits by key/value heads: kv_heads 2 over TP4 is
// refused on every rank, naming both numbers.
TEST_F(ModelParallelTest, RefusesKvHeadsThatTpDoesNotDivide) {
  json bad = Config("bad", "llama-tiny", "TP4");
  std::vector<int> status = Run(bad);
  for (size_t r = 0; r < status.size(); ++r) {
    const std::string log = Log("bad", static_cast<int>(r));
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 2) << log;
    EXPECT_NE(log.find("kv_heads (2) is not divisible by 4"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace bm::train
