#include "trainer/cpu/llava_model.h"

#include <algorithm>

namespace bm::train::cpu {

template <typename Float>
LlavaModel<Float>::LlavaModel(const LlavaConfig& config, int64_t max_batch, int64_t max_seq,
                              int64_t max_images)
    : config_(config),
      layout_(config),
      max_images_(std::max<int64_t>(max_images, 1)),
      max_seq_(max_seq),
      tower_(config.vision, max_images_),
      projector_(config, max_images_ * config.image_tokens()),
      text_(config.text, max_batch, max_seq) {
  const int64_t rows = max_images_ * config.image_tokens(), H = config.text.hidden;
  pixels_.reserve(max_images_ * 3 * config.vision.image_size * config.vision.image_size);
  kept_.reserve(rows);
  positions_.reserve(rows);
  rows_.reserve(rows * H);
  row_grad_.reserve(rows * H);
  dprojected_.reserve(rows * H);
  dfeatures_.reserve(rows * config.vision.hidden);  // released by a frozen tower
}

template <typename Float>
void LlavaModel<Float>::SetFreeze(const LlavaFreeze& freeze) {
  freeze_.vision_tower |= freeze.vision_tower;
  freeze_.projector |= freeze.projector;
  freeze_.language_model |= freeze.language_model;
  if (freeze_.vision_tower) {
    std::vector<Float>().swap(tower_.grads());  // released, never written again
    std::vector<Float>().swap(dfeatures_);
  }
  if (freeze_.projector) std::vector<Float>().swap(projector_.grads());
  if (freeze_.language_model && !text_.weights_frozen()) text_.FreezeWeights();
}

template <typename Float>
Status LlavaModel<Float>::SetParameters(std::span<const Float> params) {
  if (static_cast<int64_t>(params.size()) != layout_.total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel::SetParameters: {} values, the model has {}", params.size(),
                  layout_.total());
  auto put = [&](std::vector<Float>& part, int64_t offset) {
    std::copy(params.begin() + offset, params.begin() + offset + part.size(), part.begin());
  };
  put(tower_.params(), layout_.vision_offset());
  put(projector_.params(), layout_.projector_offset());
  put(text_.params(), layout_.text_offset());
  return Status::Ok();
}

template <typename Float>
Status LlavaModel<Float>::GetParameters(std::span<Float> params) const {
  if (static_cast<int64_t>(params.size()) != layout_.total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel::GetParameters: {} values, the model has {}", params.size(),
                  layout_.total());
  const auto& t = tower_.params();
  const auto& p = projector_.params();
  const auto& x = text_.params();
  std::copy(t.begin(), t.end(), params.begin() + layout_.vision_offset());
  std::copy(p.begin(), p.end(), params.begin() + layout_.projector_offset());
  std::copy(x.begin(), x.end(), params.begin() + layout_.text_offset());
  return Status::Ok();
}

template <typename Float>
Status LlavaModel<Float>::GetGradients(std::span<Float> grads) const {
  if (static_cast<int64_t>(grads.size()) != layout_.total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel::GetGradients: {} values, the model has {}", grads.size(),
                  layout_.total());
  std::fill(grads.begin(), grads.end(), Float(0));  // frozen parts: none
  const auto& t = tower_.grads();
  const auto& p = projector_.grads();
  const auto& x = text_.grads();
  std::copy(t.begin(), t.end(), grads.begin() + layout_.vision_offset());
  std::copy(p.begin(), p.end(), grads.begin() + layout_.projector_offset());
  std::copy(x.begin(), x.end(), grads.begin() + layout_.text_offset());
  return Status::Ok();
}

template <typename Float>
void LlavaModel<Float>::ZeroGrad() {
  for (std::vector<Float>* g : {&tower_.grads(), &projector_.grads(), &text_.grads()})
    std::fill(g->begin(), g->end(), Float(0));
}

template <typename Float>
Status LlavaModel<Float>::Encode(const LlavaMicroBatch& batch) {
  const int64_t n = batch.images, K = config_.image_tokens(), H = config_.text.hidden;
  const int64_t N = batch.B * batch.T;
  if (n < 0 || n > max_images_)
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel: a micro-batch of {} images; the model holds at most {}", n,
                  max_images_);
  if (n > 0 && (!batch.pixel_values || !batch.image_positions))
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel: {} images without pixel values or positions", n);
  kept_.clear();
  positions_.clear();
  std::vector<uint8_t> used(N, 0);
  for (int64_t i = 0; i < n * K; ++i) {
    const int64_t p = batch.image_positions[i];
    if (p == -1) continue;
    if (p < 0 || p >= N)
      return Errorf(ErrorCode::kInvalidArgument,
                    "LlavaModel: image {} token {} at position {}, outside the batch's [0, {})",
                    i / K, i % K, p, N);
    if (used[p])
      return Errorf(ErrorCode::kInvalidArgument,
                    "LlavaModel: position {} holds two image tokens (image {} token {})", p, i / K,
                    i % K);
    used[p] = 1;
    kept_.push_back(i);
    positions_.push_back(p);
  }
  const int64_t kept = static_cast<int64_t>(kept_.size());
  rows_.resize(kept * H);
  row_grad_.assign(kept * H, Float(0));
  if (n > 0) {
    const int64_t S = config_.vision.image_size, px = n * config_.vision.channels * S * S;
    pixels_.assign(batch.pixel_values, batch.pixel_values + px);
    tower_.Forward(pixels_.data(), n);
    projector_.Forward(tower_.features(), n * K);
    const Float* out = projector_.output();
    for (int64_t j = 0; j < kept; ++j)
      std::copy(out + kept_[j] * H, out + (kept_[j] + 1) * H, rows_.begin() + j * H);
  }
  // a frozen projector (and tower): the rows' gradient is wanted by nobody
  spliced_ = {positions_.data(), kept, rows_.data(),
              freeze_.projector ? nullptr : row_grad_.data()};
  return Status::Ok();
}

template <typename Float>
void LlavaModel<Float>::BackwardImages(int64_t n) {
  if (n == 0 || freeze_.projector) return;  // (the tower is then frozen too)
  const int64_t K = config_.image_tokens(), H = config_.text.hidden;
  dprojected_.assign(n * K * H, Float(0));  // cut-off tokens: no gradient
  for (size_t j = 0; j < kept_.size(); ++j)
    std::copy(row_grad_.begin() + j * H, row_grad_.begin() + (j + 1) * H,
              dprojected_.begin() + kept_[j] * H);
  if (freeze_.vision_tower) {  // no gradient into the tower's features
    projector_.Backward(dprojected_.data(), n * K);
    return;
  }
  dfeatures_.assign(n * K * config_.vision.hidden, Float(0));
  projector_.Backward(dprojected_.data(), n * K, dfeatures_.data());
  tower_.Backward(dfeatures_.data(), n);
}

template <typename Float>
Status LlavaModel<Float>::ForwardBackward(const LlavaMicroBatch& batch, Float loss_scale,
                                          double* loss_sum, int64_t* count) {
  BM_TRY(Encode(batch));
  text_.ForwardBackward(batch.inputs, batch.targets, batch.loss_mask, batch.B, batch.T, loss_scale,
                        loss_sum, count, &spliced_);
  BM_TRY(text_.status());
  BackwardImages(batch.images);
  return Status::Ok();
}

template <typename Float>
Status LlavaModel<Float>::TokenLosses(const LlavaMicroBatch& batch, Float* losses) {
  BM_TRY(Encode(batch));
  text_.TokenLosses(batch.inputs, batch.targets, batch.B, batch.T, losses, &spliced_);
  return text_.status();
}

template <typename Float>
Result<std::vector<int32_t>> LlavaModel<Float>::GenerateGreedy(
    std::span<const int32_t> prompt, const float* pixel_values, const int64_t* image_positions,
    int64_t images, int64_t max_new_tokens, int32_t eos_id, bool* context_full) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n < 1 || n > max_seq_)
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel::GenerateGreedy: a prompt of {} tokens; the model reads 1 to {} "
                  "(max_seq)",
                  n, max_seq_);
  if (max_new_tokens < 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaModel::GenerateGreedy: max_new_tokens {} (>= 1)", max_new_tokens);
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  ids.reserve(max_seq_ + 1);
  // The image rows depend on the pixels only: computed once, spliced into every pass.
  const LlavaMicroBatch batch{ids.data(), nullptr,      nullptr,         1,
                              n,          pixel_values, image_positions, images};
  BM_TRY(Encode(batch));
  spliced_.grad = nullptr;
  std::vector<int32_t> out;
  if (context_full) *context_full = false;
  while (static_cast<int64_t>(out.size()) < max_new_tokens) {
    if (static_cast<int64_t>(ids.size()) > max_seq_) {  // the last token read no further
      if (context_full) *context_full = true;
      break;
    }
    const int64_t len = static_cast<int64_t>(ids.size());
    int32_t next = 0;
    text_.LastTokenArgmax(ids.data(), &len, 1, len, &next, &spliced_);
    BM_TRY(text_.status());
    out.push_back(next);
    ids.push_back(next);
    if (next == eos_id) break;
  }
  return out;
}

template class LlavaModel<float>;
template class LlavaModel<double>;

}  // namespace bm::train::cpu
