// LlavaModel<Float>: LLaVA-1.5 on the CPU — pixel values through the vision
// tower (trainer/cpu/vision_tower.h) to the feature layer's patch tokens,
// through the projector (trainer/cpu/projector.h), spliced into the language
// model (Model<Float>, SplicedRows) at the micro-batch's image positions, as
// Hugging Face's LlavaForConditionalGeneration computes it (the features
// scattered into inputs_embeds where the image tokens are). Loss, and the
// gradients of all three parts.
//
// Parameters and gradients live in each part's own buffer, in the part's
// layout (LlavaLayout's vision(), projector(), text()); GetParameters /
// SetParameters / GetGradients move the whole model's flat buffer
// (LlavaLayout::whole() order: tower, projector, language model) in and out.
//
// An image token cut off by truncation (position -1, trainer/data/llava_batch.h)
// is computed by the tower and projector (the image is whole there, as in
// LLaVA, which truncates after splicing) but used nowhere: its gradient is 0.
// Frozen parts (SetFreeze, trainer/model/llava_freeze.h) hold no gradient
// buffer: a frozen tower's backward is not run, a frozen projector's neither
// (nor the rows' gradient taken), a frozen language model computes input
// gradients only (Model::FreezeWeights).
// Float is float (the backend) or double (finite-difference checks).
// Not thread-safe (one caller).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/cpu/model.h"
#include "trainer/cpu/projector.h"
#include "trainer/cpu/vision_tower.h"
#include "trainer/model/llava_freeze.h"
#include "trainer/model/llava_layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cpu {

// One micro-batch of a LLaVA model: MicroBatch's fields (trainer/backend.h).
struct LlavaMicroBatch {
  const int32_t* inputs = nullptr;     // [B, T]; a valid text id at image positions
  const int32_t* targets = nullptr;    // [B, T]
  const uint8_t* loss_mask = nullptr;  // [B, T] or nullptr (all ones)
  int64_t B = 0, T = 0;
  const float* pixel_values = nullptr;       // [images, 3, S, S]
  const int64_t* image_positions = nullptr;  // [images, image_tokens]: b*T+t or -1
  int64_t images = 0;
};

template <typename Float>
class LlavaModel {
 public:
  // Preconditions: Validate(config) is OK, max_seq <= config.text.max_seq.
  // max_images: the most images one micro-batch holds.
  LlavaModel(const LlavaConfig& config, int64_t max_batch, int64_t max_seq, int64_t max_images);

  const LlavaConfig& config() const { return config_; }
  const LlavaLayout& layout() const { return layout_; }
  VisionTower<Float>& tower() { return tower_; }
  Projector<Float>& projector() { return projector_; }
  Model<Float>& text() { return text_; }

  // Freezes parts, for good (a part once frozen stays so): releases their
  // gradient buffers. Validate(freeze) must be OK.
  void SetFreeze(const LlavaFreeze& freeze);
  const LlavaFreeze& freeze() const { return freeze_; }

  // The whole model's buffers (layout().total() values); a frozen part's
  // gradients read as zeros.
  Status SetParameters(std::span<const Float> params);
  Status GetParameters(std::span<Float> params) const;
  Status GetGradients(std::span<Float> grads) const;
  void ZeroGrad();

  // Forward, loss and backward of one micro-batch; gradients accumulate in
  // all three parts. As Model::ForwardBackward: the gradient of
  // Σ loss_scale * mask * loss; the unscaled sum and count returned.
  // kInvalidArgument (nothing computed) for too many images, an image
  // position outside [0, B*T) or used twice.
  Status ForwardBackward(const LlavaMicroBatch& batch, Float loss_scale, double* loss_sum,
                         int64_t* count);
  // Forward only: per-position losses[B*T].
  Status TokenLosses(const LlavaMicroBatch& batch, Float* losses);

  // Greedy decoding of one prompt, as transformers' generate with do_sample=False and
  // num_beams=1 runs it (no KV cache: every new token reruns the whole prefix, the image's
  // rows spliced in at the same positions each time). prompt: ids with a valid text id at the
  // image positions (0); pixel_values [images, 3, S, S]; image_positions [images *
  // image_tokens], each a position t of the prompt (B = 1). Appends the argmax of the
  // last position's next-token logits, one token at a time, until max_new_tokens are made,
  // the token is eos_id (kept as the last one), or the sequence outgrows the model's max_seq
  // (the constructor's: a token made after max_seq tokens is the last; *context_full is set
  // then). Returns the new tokens only.
  // kInvalidArgument (nothing computed): an empty prompt or one of more than max_seq tokens,
  // max_new_tokens < 1, the image checks of ForwardBackward.
  Result<std::vector<int32_t>> GenerateGreedy(std::span<const int32_t> prompt,
                                              const float* pixel_values,
                                              const int64_t* image_positions, int64_t images,
                                              int64_t max_new_tokens, int32_t eos_id,
                                              bool* context_full = nullptr);

 private:
  // The tower and projector over the batch's images; fills spliced_ with the
  // kept image tokens' positions and rows.
  Status Encode(const LlavaMicroBatch& batch);
  // The rows' gradient (spliced_.grad) back through the projector and tower.
  void BackwardImages(int64_t images);

  LlavaConfig config_;
  LlavaLayout layout_;
  LlavaFreeze freeze_;
  int64_t max_images_;
  int64_t max_seq_;
  VisionTower<Float> tower_;
  Projector<Float> projector_;
  Model<Float> text_;
  std::vector<Float> pixels_;           // [images, 3, S, S] in Float
  std::vector<int64_t> kept_;           // index (image * K + k) of each kept image token
  std::vector<int64_t> positions_;      // its position b*T+t
  std::vector<Float> rows_, row_grad_;  // [kept, H]
  std::vector<Float> dprojected_;       // [images * K, H]: the projector's output gradient
  std::vector<Float> dfeatures_;        // [images * K, C_v]: the tower's output gradient
  SplicedRows<Float> spliced_;
};

extern template class LlavaModel<float>;
extern template class LlavaModel<double>;

}  // namespace bm::train::cpu
