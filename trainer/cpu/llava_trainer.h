// LlavaTrainer: LLaVA-1.5 training on the CPU — LlavaModel<float> with AdamW,
// data parallel over a host communicator. The language model runs under the
// CPU backend's DataParallel (trainer/cpu/data_parallel.h: any ZeRO stage,
// its units reduced as the backward finishes them); the vision tower and the
// projector (0.3B of LLaVA-1.5-13B's 13.4B) are replicated on every rank,
// their gradients all-reduced (sum) after the step's last micro-batch and
// their AdamW state whole on every rank (the same update everywhere). The
// gradient norm and clipping cover the parts that train.
//
// Frozen parts (LlavaFreeze, trainer/model/llava_freeze.h: LLaVA's stages)
// hold no gradients and no AdamW state and take part in no reduction: a
// frozen language model has no DataParallel at all (its weights whole on every
// rank, whatever the ZeRO stage; its backward computes input gradients only),
// a frozen tower or projector is no Part. Their weights stay as set, bit for
// bit; the gradient norm covers the trained parts only.
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
#include "trainer/model/llava_freeze.h"

namespace bm::train::cpu {

// The same choice as LlavaFreeze, spelled as the parts that train (the form the CUDA LLaVA
// trainer, cuda/cuda_llava_trainer.h on branch llava-cuda, takes): the complement.
struct LlavaTrainable {
  bool tower = true, projector = true, language_model = true;
};
inline LlavaTrainable TrainableOf(const LlavaFreeze& f) {
  return {!f.vision_tower, !f.projector, !f.language_model};
}

class LlavaTrainer {
 public:
  // options: max_batch, max_seq, threads, dp (nullptr: a world of one), zero; precision fp32,
  // no TP or PP groups (else kUnsupported). max_images: the most images of one micro-batch.
  // freeze: the parts that do not train (Validate(freeze) must be OK, else its error).
  static Result<std::unique_ptr<LlavaTrainer>> Create(const LlavaConfig& config,
                                                      const BackendOptions& options,
                                                      int64_t max_images,
                                                      const LlavaFreeze& freeze = {});
  ~LlavaTrainer();

  int64_t total() const { return model_->layout().total(); }  // the whole model's floats
  const LlavaLayout& layout() const { return model_->layout(); }
  const LlavaFreeze& freeze() const { return model_->freeze(); }

  // Floats this rank holds to train each part (not its parameters): gradient
  // buffers (the part's own, plus ZeRO >= 2's reduced shard of the language
  // model) and AdamW moments (m and v together). 0 for a frozen part.
  struct TrainingState {
    int64_t vision_grads = 0, vision_moments = 0;
    int64_t projector_grads = 0, projector_moments = 0;
    int64_t text_grads = 0, text_moments = 0;
  };
  TrainingState training_state() const;

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
  // The replicated parts that train: tower then projector.
  struct Part {
    std::vector<float>* params;
    std::vector<float>* grads;
    const ParamLayout* layout;
    std::vector<float> m, v;
  };

  std::unique_ptr<dist::Communicator> self_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<LlavaModel<float>> model_;
  std::unique_ptr<DataParallel> dp_;  // nullptr: a frozen language model
  std::vector<Part> parts_;
};

}  // namespace bm::train::cpu
