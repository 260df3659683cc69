#include "trainer/data/batch.h"

#include "trainer/rng.h"

namespace bm::train {
namespace {

Status FillRow(const TokenData& data, int64_t start, int64_t T, int64_t row, Batch* batch) {
  std::vector<int32_t> window(T + 1);
  std::vector<uint8_t> mask(T + 1);
  BM_TRY(data.Read(start, T + 1, window.data(), data.has_mask() ? mask.data() : nullptr));
  for (int64_t t = 0; t < T; ++t) {
    batch->inputs[row * T + t] = window[t];
    batch->targets[row * T + t] = window[t + 1];
    if (data.has_mask()) batch->mask[row * T + t] = mask[t + 1];
  }
  return Status::Ok();
}

void Resize(const TokenData& data, int64_t B, int64_t T, Batch* batch) {
  batch->B = B;
  batch->T = T;
  batch->inputs.assign(B * T, 0);
  batch->targets.assign(B * T, 0);
  batch->mask.assign(data.has_mask() ? B * T : 0, 0);
  batch->images = 0;
  batch->pixel_values.clear();
  batch->image_positions.clear();
}

}  // namespace

int64_t Batch::MaskedCount() const {
  if (mask.empty()) return B * T;
  int64_t n = 0;
  for (uint8_t m : mask) n += m;
  return n;
}

Status SampleTrainBatch(const TokenData& data, uint64_t seed, int64_t step, int64_t first_row,
                        int64_t B, int64_t T, Batch* batch) {
  if (data.num_tokens() <= T)
    return Errorf(ErrorCode::kInvalidArgument,
                  "the training data has {} tokens, fewer than one window of mpe + 1 = {}",
                  data.num_tokens(), T + 1);
  Resize(data, B, T, batch);
  const uint64_t starts =
      static_cast<uint64_t>(data.num_tokens() - T);  // window start in [0, starts)
  for (int64_t b = 0; b < B; ++b) {
    const uint64_t row = static_cast<uint64_t>(first_row + b);
    const uint64_t index = (static_cast<uint64_t>(step) << 24) | row;
    const int64_t start = static_cast<int64_t>(UniformIntAt(seed, kStreamData, index, starts));
    BM_TRY(FillRow(data, start, T, b, batch));
  }
  return Status::Ok();
}

int64_t NumEvalWindows(const TokenData& data, int64_t T) { return (data.num_tokens() - 1) / T; }

Status ReadEvalWindows(const TokenData& data, int64_t first_window, int64_t B, int64_t T,
                       Batch* batch) {
  Resize(data, B, T, batch);
  for (int64_t b = 0; b < B; ++b) BM_TRY(FillRow(data, (first_window + b) * T, T, b, batch));
  return Status::Ok();
}

}  // namespace bm::train
