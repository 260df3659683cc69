// The CPU model under tensor parallelism, in double precision, against the
// whole model: TP ranks (forked processes, Gloo) run one micro-batch's forward
// and backward on their shards; the loss must equal the whole model's on every
// rank, the shards' gradients placed together must be the whole model's
// gradient, and the replicated tensors' gradients (norms, positions,
// row-parallel biases) must come out bit-identical on every TP rank — the
// reason they need no reduction (trainer/cpu/model.h).
//
// In double the only differences are the order of sums (row-parallel partial
// products, the vocabulary-parallel softmax), ~1e-16 relative per sum: we
// allow 1e-11; a wrong slice, a missed all-reduce or a misplaced bias moves
// gradients by ~1e-2. Sequence parallelism is checked the same way: its norms'
// weight gradients are all-reduced partial sums, identical on every rank too.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "tests/trainer/multi_rank.h"
#include "trainer/cpu/model.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/dist/process_groups.h"
#include "trainer/model/shard.h"
#include "trainer/rng.h"

namespace bm::train::cpu {
namespace {

using dist::testing::AllRanksPassed;
using dist::testing::EnvOf;
using dist::testing::RankResult;
using dist::testing::RunRanks;
using dist::testing::TempDir;

// A model with vocabulary padding under TP2 (V = 13) and grouped-query heads.
ModelConfig Small(const char* preset) {
  ModelConfig c = *Preset(preset);
  c.vocab = 13;
  c.hidden = 16;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = c.family == Family::kLlama ? 2 : 4;
  c.ffn_hidden = c.family == Family::kLlama ? 24 : 64;
  c.max_seq = 8;
  return c;
}

// Whole-model values with signal everywhere (larger than the 0.02 init).
std::vector<double> Weights(const ModelConfig& c) {
  const ParamLayout layout(c);
  std::vector<float> init = InitParameters(c, layout, 3);
  std::vector<double> w(init.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = init[i] * 10.0 + 0.05 * NormalAt(9, 9, i);
  return w;
}

// ModelShard::Extract / Place for doubles, through the same blocks.
void Extract(const ModelShard& s, const std::vector<double>& full, std::vector<double>& local) {
  std::fill(local.begin(), local.end(), 0.0);
  for (const ModelShard::Block& b : s.blocks())
    for (int64_t r = 0; r < b.rows; ++r)
      std::copy_n(full.data() + b.full + r * b.full_stride, b.width,
                  local.data() + b.local + r * b.local_stride);
}
void Place(const ModelShard& s, const std::vector<double>& local, std::vector<double>& full) {
  for (const ModelShard::Block& b : s.blocks()) {
    if (!s.owns(b.tensor)) continue;
    for (int64_t r = 0; r < b.rows; ++r)
      std::copy_n(local.data() + b.local + r * b.local_stride, b.width,
                  full.data() + b.full + r * b.full_stride);
  }
}

constexpr int64_t kB = 2, kT = 7;
const std::vector<int32_t> kInputs = {1, 4, 12, 9, 0, 3, 11, 3, 10, 5, 7, 12, 6, 2};
const std::vector<int32_t> kTargets = {4, 12, 9, 0, 6, 3, 8, 10, 5, 7, 1, 12, 2, 11};
const std::vector<uint8_t> kMask = {1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1};

void CheckTensorParallel(const ModelConfig& c, int tp, bool sequence_parallel = false) {
  TempDir dir;
  auto outcomes = RunRanks(tp, 120, [&](int rank) -> RankResult {
    omp_set_num_threads(1);
    SetBlasThreads(1);
    const std::vector<double> w = Weights(c);
    // The whole model, here in every rank (nothing computed before the fork).
    Model<double> whole(c, kB, kT);
    whole.params() = w;
    double want_sum = 0;
    int64_t want_count = 0;
    whole.ForwardBackward(kInputs.data(), kTargets.data(), kMask.data(), kB, kT, 0.37, &want_sum,
                          &want_count);
    // This rank's shard.
    Result<dist::ProcessGroups> groups = dist::ConnectProcessGroups(
        EnvOf(rank, tp, dir.path(), 60), tp, 1, 1, dist::Transport::kGloo);
    RANK_OK(groups.status());
    Result<ModelShard> shard = ModelShard::Make(c, {tp, rank, 1, 0});
    RANK_OK(shard.status());
    Model<double> model(*shard, kB, kT, sequence_parallel);
    model.set_tensor_parallel(groups->tp.get());
    Extract(*shard, w, model.params());
    double sum = 0;
    int64_t count = 0;
    model.ForwardBackward(kInputs.data(), kTargets.data(), kMask.data(), kB, kT, 0.37, &sum,
                          &count);
    RANK_OK(model.status());
    RANK_CHECK(count == want_count, "{} masked targets, the whole model {}", count, want_count);
    RANK_CHECK(std::abs(sum - want_sum) <= 1e-11 * std::abs(want_sum), "loss {} vs {}", sum,
               want_sum);
    // The gradient of every element this rank owns equals the whole model's.
    std::vector<double> mine(w.size(), NAN);
    Place(*shard, model.grads(), mine);
    for (const ParamTensor& t : whole.layout().tensors())
      for (int64_t j = 0; j < t.numel; ++j) {
        const double g = mine[t.offset + j], want = whole.grads()[t.offset + j];
        if (std::isnan(g)) continue;  // another rank's
        RANK_CHECK(std::abs(g - want) <= 1e-11 * (1 + std::abs(want)), "{}[{}]: {} vs {}", t.name,
                   j, g, want);
      }
    // Everything for the parent: the loss bits, the owned gradients, the replicated ones.
    RankResult result;
    result.output.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
    for (const ParamTensor& t : shard->layout().tensors())
      if (shard->replicated(shard->layout().Index(t.name)))
        result.output.append(reinterpret_cast<const char*>(model.grads().data() + t.offset),
                             t.numel * sizeof(double));
    result.output.append(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(double));
    return result;
  });
  ASSERT_TRUE(AllRanksPassed(outcomes));
  // The same loss and the same replicated gradients, bit for bit, on every TP rank.
  const size_t whole_bytes = ParamLayout(c).total() * sizeof(double);
  const std::string& first = outcomes[0].result.output;
  for (int r = 1; r < tp; ++r) {
    const std::string& other = outcomes[r].result.output;
    ASSERT_EQ(other.size(), first.size());
    EXPECT_EQ(other.compare(0, other.size() - whole_bytes, first, 0, first.size() - whole_bytes), 0)
        << "rank " << r << " differs from rank 0 in its loss or a replicated gradient";
  }
  // Every element's gradient came from exactly one rank.
  std::vector<int> owners(ParamLayout(c).total(), 0);
  for (const auto& o : outcomes) {
    std::vector<double> mine(owners.size());
    std::memcpy(mine.data(), o.result.output.data() + o.result.output.size() - whole_bytes,
                whole_bytes);
    for (size_t i = 0; i < owners.size(); ++i) owners[i] += !std::isnan(mine[i]);
  }
  for (size_t i = 0; i < owners.size(); ++i) ASSERT_EQ(owners[i], 1) << "element " << i;
}

TEST(TensorParallelModelTest, GptMatchesTheWholeModel) {
  CheckTensorParallel(Small("gpt-tiny"), 2);
}
TEST(TensorParallelModelTest, GqaLlamaMatchesTheWholeModel) {
  CheckTensorParallel(Small("llama-tiny"), 2);
}
TEST(TensorParallelModelTest, GptWithSequenceParallelismMatchesTheWholeModel) {
  CheckTensorParallel(Small("gpt-tiny"), 2, /*sequence_parallel=*/true);
}
TEST(TensorParallelModelTest, GqaLlamaWithSequenceParallelismMatchesTheWholeModel) {
  CheckTensorParallel(Small("llama-tiny"), 2, /*sequence_parallel=*/true);
}

// Sequence parallelism splits the B*T = 14 tokens: TP4 does not divide them,
// and every rank says so before any collective (none waits for another).
TEST(TensorParallelModelTest, SequenceParallelismRefusesTokensTpDoesNotDivide) {
  ModelConfig c = Small("llama-tiny");
  c.kv_heads = 4;
  TempDir dir;
  auto outcomes = RunRanks(4, 60, [&](int rank) -> RankResult {
    omp_set_num_threads(1);
    Result<dist::ProcessGroups> groups =
        dist::ConnectProcessGroups(EnvOf(rank, 4, dir.path(), 60), 4, 1, 1, dist::Transport::kGloo);
    RANK_OK(groups.status());
    Result<ModelShard> shard = ModelShard::Make(c, {4, rank, 1, 0});
    RANK_OK(shard.status());
    Model<double> model(*shard, kB, kT, /*sequence_parallel=*/true);
    model.set_tensor_parallel(groups->tp.get());
    double sum = 0;
    int64_t count = 0;
    model.ForwardBackward(kInputs.data(), kTargets.data(), kMask.data(), kB, kT, 1.0, &sum, &count);
    RANK_CHECK(!model.status().ok(), "TP4 over 14 tokens was accepted");
    RANK_CHECK(model.status().message().find("2x7 = 14 tokens over TP4") != std::string::npos, "{}",
               model.status().message());
    return RankResult{};
  });
  EXPECT_TRUE(AllRanksPassed(outcomes));
}

TEST(TensorParallelModelTest, FourRanksOneKvHeadEach) {
  ModelConfig c = Small("llama-tiny");
  c.kv_heads = 4;
  CheckTensorParallel(c, 4);
}

}  // namespace
}  // namespace bm::train::cpu
