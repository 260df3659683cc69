// LlavaTrainer: LLaVA-1.5 training on the CPU — LlavaModel<float> with AdamW,
// data parallel over a host communicator. The language model runs under the
// CPU backend's DataParallel (trainer/cpu/data_parallel.h: any ZeRO stage,
// its units reduced as the backward finishes them); the vision tower and the
// projector (0.3B of LLaVA-1.5-13B's 13.4B) are replicated on every rank,
// their gradients all-reduced (sum) after the step's last micro-batch and
// their AdamW state whole on every rank (the same update everywhere). The
// gradient norm and clipping cover the trained parts (Trainable: LLaVA-1.5 freezes the tower,
// and in its pretraining stage the language model too).
//
// Collective over the DP group (every rank, same order): ForwardBackward,
// GradNorm, OptimizerStep, GetParameters. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/data_parallel.h"
#include "trainer/cpu/llava_model.h"

namespace bm::train::cpu {

// The parts AdamW updates; a frozen one keeps its weights bit for bit and counts in no
// gradient norm (as PyTorch's clipping of the parameters that have gradients).
struct LlavaTrainable {
  bool tower = true, projector = true, language_model = true;
};

class LlavaTrainer {
 public:
  using Trainable = LlavaTrainable;
  // options: max_batch, max_seq, threads, dp (nullptr: a world of one), zero; precision fp32,
  // no TP or PP groups (else kUnsupported). max_images: the most images of one micro-batch.
  static Result<std::unique_ptr<LlavaTrainer>> Create(const LlavaConfig& config,
                                                      const BackendOptions& options,
                                                      int64_t max_images, Trainable trainable = {});
  ~LlavaTrainer();

  int64_t total() const { return model_->layout().total(); }  // the whole model's floats
  const LlavaLayout& layout() const { return model_->layout(); }

  // The whole model (LlavaLayout order) on every rank.
  Status SetParameters(std::span<const float> whole);
  // Gathered (collective under ZeRO-3); an empty span takes part and keeps nothing.
  Status GetParameters(std::span<float> whole);

  Status ZeroGrad();
  // One micro-batch; `last`: the step's last (the reductions finish then).
  Result<LossSum> ForwardBackward(const LlavaMicroBatch& batch, float loss_scale, bool last);
  // sqrt(Σ g²) over the whole model's gradients as they stand.
  Result<float> GradNorm();
  // Clipping by the global norm and one AdamW update of all three parts.
  Status OptimizerStep(const AdamWStep& step);

 private:
  LlavaTrainer() = default;
  // The replicated parts: tower then projector.
  struct Part {
    bool trained;
    std::vector<float>* params;
    std::vector<float>* grads;
    const ParamLayout* layout;
    std::vector<float> m, v;
  };

  std::unique_ptr<dist::Communicator> self_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<LlavaModel<float>> model_;
  std::unique_ptr<DataParallel> dp_;
  std::vector<Part> parts_;
  bool train_lm_ = true;
};

}  // namespace bm::train::cpu
