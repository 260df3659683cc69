// Model<Float>: the whole transformer on the CPU — forward, classifier and
// backward over the ops in trainer/cpu/ops/ — for both families. Float is
// float (the backend) or double (finite-difference checks of the whole model).
//
// Parameters and gradients are flat buffers in ParamLayout order. Activations
// for up to max_batch × max_seq positions are allocated once. The classifier
// runs over chunks of rows, so [B*T, V] logits never exist at once.
//
// Not thread-safe (one caller); the ops inside use OpenMP threads.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace bm::train::cpu {

// What the model tells a data-parallel layer (trainer/cpu/data_parallel.h)
// around each unit of the layout (trainer/model/layout.h: unit 0 the
// embeddings, 1..L the layers, L+1 the final norm and head). The model calls
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

template <typename Float>
class Model {
 public:
  // Preconditions: Validate(config) is OK; max_seq <= config.max_seq.
  Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq);

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  std::vector<Float>& params() { return params_; }
  const std::vector<Float>& params() const { return params_; }
  std::vector<Float>& grads() { return grads_; }
  const std::vector<Float>& grads() const { return grads_; }

  // Forward, loss and backward of one micro-batch; gradients accumulate.
  // weights[b*T+t] (nullable = all ones) multiplies each token's loss; the
  // gradient is that of Σ loss_scale * weight * loss. Returns Σ weight*loss
  // over positions with weight != 0 (unscaled) in `loss_sum`, their count in
  // `count`. inputs/targets: [B, T] token ids in [0, V).
  void ForwardBackward(const int32_t* inputs, const int32_t* targets, const uint8_t* mask,
                       int64_t B, int64_t T, Float loss_scale, double* loss_sum, int64_t* count);

  // Forward only: per-position losses[B*T].
  void TokenLosses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                   Float* losses);

  // Forward only: argmax[B*T] of the next-token logits at every position.
  void NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax);
  // Forward only: argmax[b] of the next-token logits at position lengths[b] - 1.
  void LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B, int64_t T,
                       int32_t* argmax);

  // Bytes held by parameters, gradients and activations.
  int64_t bytes() const;

  // nullptr (default): no hooks. Not owned.
  void set_hooks(UnitHooks* hooks) { hooks_ = hooks; }

 private:
  struct LayerParams;
  struct LayerActs;
  LayerParams Layer(std::vector<Float>& buffer, int64_t l) const;

  void Forward(const int32_t* inputs, int64_t B, int64_t T);
  // Runs the classifier over lnf_ rows in chunks. With dlosses (per row, nullable)
  // it also backpropagates into dlnf_ and the classifier's gradient.
  void Classifier(const int32_t* targets, int64_t N, Float* losses, const Float* dlosses,
                  int32_t* argmax);
  void Backward(const int32_t* inputs, int64_t B, int64_t T);

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
  int FinalUnit() const { return static_cast<int>(config_.layers) + 1; }
  // After a forward-only pass: the units the forward left acquired.
  void ReleaseAfterForward();

  ModelConfig config_;
  ParamLayout layout_;
  UnitHooks* hooks_ = nullptr;
  int64_t max_batch_, max_seq_;
  std::vector<Float> params_, grads_;

  // Activations, per layer: [L][...]; residual_ has L+1 entries.
  std::vector<std::vector<Float>> residual_, ln1_, ln1_mean_, ln1_rstd_, qkv_, att_, atty_, res2_,
      ln2_, ln2_mean_, ln2_rstd_, fc_, act_;
  std::vector<Float> lnf_, lnf_mean_, lnf_rstd_, logits_, tmp_;
  // Gradient scratch, reused by every layer.
  std::vector<Float> dres_, dln_, dqkv_, datty_, dfc_, dact_, dlnf_, losses_, dlosses_;
};

extern template class Model<float>;
extern template class Model<double>;

}  // namespace bm::train::cpu
