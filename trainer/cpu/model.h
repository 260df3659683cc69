// Model<Float>: the whole transformer on the CPU — forward, classifier and
// backward over the ops in trainer/cpu/ops/ — for both families. Float is
// float (the backend) or double (finite-difference checks of the whole model).
//
// Parameters and gradients are flat buffers in ParamLayout order. Activations
// for up to max_batch × max_seq positions are allocated once. The classifier
// runs over chunks of rows, so [B*T, V] logits never exist at once.
//
// A rank of a tensor- or pipeline-parallel layout builds the Model of its
// shard (trainer/model/shard.h): its layers, its heads, ffn and vocabulary
// rows, with Megatron-LM's collectives over the TP group (set_tensor_parallel):
//   column-parallel (q|k|v, MLP up): identity forward; the input gradient
//     all-reduced (sum) in backward
//   row-parallel (attention output, MLP down): the output all-reduced (sum)
//     in forward, then the bias added; identity backward
//   vocabulary-parallel embedding: each rank looks up its ids (zero rows for
//     the others), all-reduce (sum), then the positions added
//   vocabulary-parallel cross-entropy: local logits [rows, V/TP] (padding
//     ids -inf); the row maxima all-reduced (max), the sums of exponentials
//     and the target logits all-reduced (sum): every TP rank gets the same
//     loss, no rank holds a whole row of logits; the head's input gradient is
//     all-reduced (sum)
//   norms: replicated; their inputs and output gradients are identical on
//     every TP rank (they come out of all-reduces), so are their gradients:
//     no reduction
// Sequence parallelism (Megatron's --sequence-parallel, a constructor option):
// outside the TP regions each rank holds rows [rank·N/TP, (rank+1)·N/TP) of the
// residual stream ([N, C], N = B·T: tokens, so whole sequences need not
// divide), and runs the norms, residual additions and row-parallel biases on
// those rows only. The all-reduces around the TP regions become pairs:
//   entering one (before q|k|v, the MLP up, the head): the norm's output rows
//     all-gathered; in backward the input gradient reduce-scattered
//   leaving one (attention output, MLP down, the embedding lookup): the partial
//     products reduce-scattered, then the bias on the rank's rows; in backward
//     the output gradient all-gathered
// The norms' weight gradients cover this rank's rows, so they are all-reduced
// (sum) over the TP group; the biases' and positions' come from the gathered
// gradient, whole on every rank. The residual stream, the norms' statistics
// and the pipeline's messages shrink by TP; N must be a multiple of TP.
// With one TP rank none of this runs: the whole model computes exactly what
// it always did. A pipeline stage runs its part of each micro-batch through
// ForwardStage / BackwardStage, in one of several activation slots (the
// micro-batches a 1F1B schedule keeps in flight: trainer/cpu/pipeline.h).
//
// Not thread-safe (one caller); the ops inside use OpenMP threads.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"
#include "trainer/model/shard.h"

namespace bm::train::cpu {

// What the model tells a data-parallel layer (trainer/cpu/data_parallel.h)
// around each unit of its layout (trainer/model/layout.h: unit 0 the
// embeddings, 1..L the layers, L+1 the final norm and head; a pipeline
// stage's layout has the units of its part only, numbered from 0). The model calls
// them in the order it uses the units; the default is to do nothing (all
// parameters resident, gradients local).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // The parameters of `unit` must be in params() when this returns; `next`
  // (-1: none) is the unit the model acquires after it (ZeRO-3 prefetches it).
  virtual void Acquire(int unit, int next) = 0;
  // The parameters of `unit` are not read again until it is acquired again.
  virtual void Release(int unit) = 0;
  // The gradients of `unit` are complete for this micro-batch.
  virtual void GradientsReady(int unit) = 0;
};

// Rows of input embeddings that replace the token lookup at some positions of
// a micro-batch: LLaVA's projected image features at its image positions
// (HF's inputs_embeds with the image features scattered in). positions[i] is
// a flat position b*T+t of the micro-batch (distinct), rows[i*C..] the
// embedding used there. The token ids at those positions must still be valid
// ids (they are looked up and the lookup discarded); learned positions (gpt)
// are still added. In backward, grad[i*C..] is overwritten with the loss
// gradient at row i, and the token embedding gets nothing from those
// positions. With count 0 the model computes exactly what it does without.
template <typename Float>
struct SplicedRows {
  const int64_t* positions = nullptr;  // [count]
  int64_t count = 0;
  const Float* rows = nullptr;  // [count, C]
  Float* grad = nullptr;        // [count, C]; nullable: not wanted
};

template <typename Float>
class Model {
 public:
  // The whole model. Preconditions: Validate(config) is OK; max_seq <= config.max_seq.
  Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq);
  // A rank's shard; the same preconditions. sequence_parallel: as above, when
  // the shard has TP > 1 (ignored otherwise).
  Model(const ModelShard& shard, int64_t max_batch, int64_t max_seq,
        bool sequence_parallel = false);

  const ModelConfig& config() const { return shard_.config(); }  // the whole model's
  const ModelShard& shard() const { return shard_; }
  const ParamLayout& layout() const { return shard_.layout(); }  // this shard's tensors
  std::vector<Float>& params() { return params_; }
  const std::vector<Float>& params() const { return params_; }
  std::vector<Float>& grads() { return grads_; }
  const std::vector<Float>& grads() const { return grads_; }

  // Frozen weights (LLaVA's pretraining stage: the language model only passes
  // the gradient through to its spliced input rows): grads() is released
  // (empty from then on) and the backward computes input gradients only — no
  // weight gradient, no GradientsReady hook; the losses and every input
  // gradient (SplicedRows::grad, input_grad()) are what they were. For good.
  void FreezeWeights();
  bool weights_frozen() const { return weights_frozen_; }

  // The tensor-parallel group (not owned; host buffers), of shard().rank().tp
  // ranks; nullptr or a group of one: no tensor parallelism.
  void set_tensor_parallel(dist::Communicator* tp) { tp_ = tp; }
  // The first failure of a collective, sticky: the computation goes on with
  // whatever the buffers hold and the caller stops the run.
  const Status& status() const { return status_; }

  // Whole-model entry points (one pipeline stage: PP1). With tensor
  // parallelism ForwardBackward and TokenLosses are collective over the TP
  // group; the argmax functions need TP1.
  //
  // Forward, loss and backward of one micro-batch; gradients accumulate.
  // weights[b*T+t] (nullable = all ones) multiplies each token's loss; the
  // gradient is that of Σ loss_scale * weight * loss. Returns Σ weight*loss
  // over positions with weight != 0 (unscaled) in `loss_sum`, their count in
  // `count`. inputs/targets: [B, T] token ids in [0, V).
  // spliced (nullable): rows that replace the lookup (SplicedRows).
  void ForwardBackward(const int32_t* inputs, const int32_t* targets, const uint8_t* mask,
                       int64_t B, int64_t T, Float loss_scale, double* loss_sum, int64_t* count,
                       const SplicedRows<Float>* spliced = nullptr);

  // Forward only: per-position losses[B*T].
  void TokenLosses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                   Float* losses, const SplicedRows<Float>* spliced = nullptr);

  // Forward only: argmax[B*T] of the next-token logits at every position.
  void NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax);
  // Forward only: argmax[b] of the next-token logits at position lengths[b] - 1.
  // spliced (nullable): rows that replace the lookup (LLaVA's image rows in decoding).
  void LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B, int64_t T,
                       int32_t* argmax, const SplicedRows<Float>* spliced = nullptr);

  // Pipeline stages. Each micro-batch in flight has an activation slot,
  // 0 <= slot < slots() (EnsureSlots allocates more).
  //   ForwardStage: the first stage embeds `inputs`; another reads
  //     stage_input(slot) ([StreamRows(B*T), C]: the previous stage's output, filled by
  //     the caller). Runs the stage's layers (and the final norm on the last),
  //     leaving stage_output(slot) for the next stage.
  //   BackwardStage: the last stage takes the loss of `targets` (mask and
  //     loss_scale as ForwardBackward's; loss_sum / count as there, 0 on other
  //     stages) and backpropagates from it; another starts from output_grad()
  //     ([StreamRows(B*T), C]: the next stage's input gradient, filled by the caller).
  //     Gradients accumulate. Leaves input_grad() = the gradient of
  //     stage_input(slot) for the previous stage; the first stage runs the
  //     embedding backward instead.
  // The same B and T (and spliced rows, read by the first stage only) in both
  // calls of a slot. ForwardBackward is ForwardStage then BackwardStage in slot 0.
  void EnsureSlots(int slots);
  int slots() const { return static_cast<int>(acts_.size()); }
  void ForwardStage(int slot, const int32_t* inputs, int64_t B, int64_t T,
                    const SplicedRows<Float>* spliced = nullptr);
  void BackwardStage(int slot, const int32_t* inputs, const int32_t* targets, const uint8_t* mask,
                     int64_t B, int64_t T, Float loss_scale, double* loss_sum, int64_t* count,
                     const SplicedRows<Float>* spliced = nullptr);
  Float* stage_input(int slot) { return acts_[slot].residual.front().data(); }
  const Float* stage_output(int slot) const { return acts_[slot].residual.back().data(); }
  Float* output_grad() { return dres_.data(); }
  const Float* input_grad() const { return dres_.data(); }
  // The rows of the residual stream this rank holds for N = B*T tokens: N, or
  // N / TP under sequence parallelism.
  int64_t StreamRows(int64_t N) const { return sequence_parallel_ ? N / shard_.rank().tp : N; }

  // Bytes held by parameters, gradients and activations.
  int64_t bytes() const;

  // nullptr (default): no hooks. Not owned.
  void set_hooks(UnitHooks* hooks) { hooks_ = hooks; }

 private:
  struct LayerParams;
  // One micro-batch's activations; per layer of the stage: [L][...], residual
  // L+1 entries (residual[0] the stage's input, residual[L] its output).
  struct Acts {
    std::vector<std::vector<Float>> residual, ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2,
        ln2_mean, ln2_rstd, fc, act;
    std::vector<Float> lnf, lnf_mean, lnf_rstd;
  };
  // l: the layer's index in this stage (0-based).
  LayerParams Layer(std::vector<Float>& buffer, int64_t l) const;

  // Runs the classifier over the slot's lnf rows in chunks. With dlosses (per
  // row, nullable) it also backpropagates into dlnf_ and the classifier's gradient.
  void Classifier(int slot, const int32_t* targets, int64_t N, Float* losses, const Float* dlosses,
                  int32_t* argmax);
  // In-place all-reduce over the TP group; nothing without one.
  void AllReduce(Float* data, int64_t n, dist::ReduceOp op);
  // Sequence parallelism: full[N, C] summed over the TP group, this rank's
  // rows into local; this rank's rows of every rank gathered into full.
  void ReduceScatterRows(const Float* full, Float* local, int64_t N);
  void AllGatherRows(const Float* local, Float* full, int64_t N);
  // A norm's weight (and bias, nullable) gradient over this rank's rows: under
  // sequence parallelism summed over the TP group before it is added to `dw`.
  template <typename Backward>
  void NormBackward(Float* dw, Float* db, Backward backward);
  // Whether TP divides the B*T tokens under sequence parallelism (status_ says
  // why not); true without it.
  bool CheckStreamSplit(int64_t B, int64_t T);
  // Rows of the residual-stream buffers: StreamRows of the largest N, rounded up.
  int64_t StreamCapacity() const;
  bool tensor_parallel() const { return tp_ && tp_->size() > 1; }

  // Hook calls (no-ops without hooks).
  void Acquire(int unit, int next) {
    if (hooks_) hooks_->Acquire(unit, next);
  }
  void Release(int unit) {
    if (hooks_) hooks_->Release(unit);
  }
  void GradientsReady(int unit) {
    if (hooks_) hooks_->GradientsReady(unit);
  }
  // Units of the shard's layout: the embeddings (first stage), its layers, the final one (last).
  int LayerUnit(int64_t l) const {
    return static_cast<int>(l) + (shard_.part().embeddings ? 1 : 0);
  }
  int FinalUnit() const { return LayerUnit(layers_); }
  // After a forward-only pass: the units the forward left acquired.
  void ReleaseAfterForward();

  ModelShard shard_;
  int64_t layers_;  // this stage's
  // The classifier reads the token embedding of this very stage (tied, PP1).
  bool tied_here_;
  UnitHooks* hooks_ = nullptr;
  dist::Communicator* tp_ = nullptr;
  const bool sequence_parallel_;
  Status status_;
  bool weights_frozen_ = false;
  int64_t max_batch_, max_seq_;
  std::vector<Float> params_, grads_;
  std::vector<Acts> acts_;
  std::vector<Float> logits_, tmp_, xent_;  // xent_: vocabulary-parallel row statistics
  // Gradient scratch, reused by every layer.
  std::vector<Float> dres_, dln_, dqkv_, datty_, dfc_, dact_, dlnf_, losses_, dlosses_;
  // Sequence parallelism: this rank's rows of a reduce-scatter's result or of a
  // norm's output, and a norm's weight and bias gradients before their all-reduce.
  std::vector<Float> rows_, norm_grad_;
};

extern template class Model<float>;
extern template class Model<double>;

}  // namespace bm::train::cpu
