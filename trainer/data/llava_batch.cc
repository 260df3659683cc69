#include "trainer/data/llava_batch.h"

#include <algorithm>

#include "trainer/rng.h"

namespace bm::train {
namespace {

void Reset(int64_t B, int64_t T, Batch* batch) {
  batch->B = B;
  batch->T = T;
  batch->inputs.assign(B * T, 0);
  batch->targets.assign(B * T, 0);
  batch->mask.assign(B * T, 0);
  batch->images = 0;
  batch->pixel_values.clear();
  batch->image_positions.clear();
  batch->lengths.assign(B, 0);
}

// Row `row` of the batch from sample `index`: expanded, cut to T, shifted; its images appended.
Status FillRow(const LlavaData& data, int64_t index, int64_t row, Batch* batch) {
  BM_ASSIGN_OR_RETURN(LlavaSample s, data.Sample(index));
  const int64_t T = batch->T, K = data.image_tokens(), S = data.image_size();
  // the expanded sequence, up to T positions: ids (0 at image positions) and label bits
  std::vector<int32_t> ids;
  std::vector<uint8_t> labels;
  ids.reserve(T);
  labels.reserve(T);
  size_t image = 0;
  for (size_t k = 0; k < s.tokens.size() && static_cast<int64_t>(ids.size()) < T; ++k) {
    if (s.tokens[k] != data.image_token_id()) {
      ids.push_back(s.tokens[k]);
      labels.push_back(s.labels[k]);
      continue;
    }
    const int64_t first = row * T + static_cast<int64_t>(ids.size());
    const int64_t kept = std::min<int64_t>(K, T - static_cast<int64_t>(ids.size()));
    for (int64_t j = 0; j < K; ++j) batch->image_positions.push_back(j < kept ? first + j : -1);
    ids.insert(ids.end(), kept, 0);
    labels.insert(labels.end(), kept, 0);
    const size_t at = batch->pixel_values.size();
    batch->pixel_values.resize(at + 3 * S * S);
    BM_TRY(data.Pixels(s.images[image++], batch->pixel_values.data() + at));
    ++batch->images;
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  batch->lengths[row] = n;
  for (int64_t t = 0; t < n; ++t) {
    batch->inputs[row * T + t] = ids[t];
    if (t + 1 < n) {
      batch->targets[row * T + t] = ids[t + 1];
      batch->mask[row * T + t] = labels[t + 1];
    }
  }
  return Status::Ok();
}

}  // namespace

int64_t LlavaTrainSample(const LlavaData& data, uint64_t seed, int64_t step, int64_t row) {
  const uint64_t index = (static_cast<uint64_t>(step) << 24) | static_cast<uint64_t>(row);
  return static_cast<int64_t>(
      UniformIntAt(seed, kStreamData, index, static_cast<uint64_t>(data.num_samples())));
}

Status SampleLlavaTrainBatch(const LlavaData& data, uint64_t seed, int64_t step, int64_t first_row,
                             int64_t B, int64_t T, Batch* batch) {
  if (data.num_samples() < 1)
    return Errorf(ErrorCode::kInvalidArgument, "{}: the training split has no samples", data.dir());
  Reset(B, T, batch);
  for (int64_t b = 0; b < B; ++b)
    BM_TRY(FillRow(data, LlavaTrainSample(data, seed, step, first_row + b), b, batch));
  return Status::Ok();
}

void TrimLlavaBatch(Batch* batch, int64_t multiple) {
  const int64_t B = batch->B, T = batch->T;
  int64_t W = 1;
  for (int64_t n : batch->lengths) W = std::max(W, n);
  multiple = std::max<int64_t>(multiple, 1);
  W = (W + multiple - 1) / multiple * multiple;
  if (W >= T) return;
  for (int64_t b = 0; b < B; ++b) {  // rows move left only: row b's new start <= its old one
    std::copy_n(batch->inputs.begin() + b * T, W, batch->inputs.begin() + b * W);
    std::copy_n(batch->targets.begin() + b * T, W, batch->targets.begin() + b * W);
    std::copy_n(batch->mask.begin() + b * T, W, batch->mask.begin() + b * W);
  }
  batch->inputs.resize(B * W);
  batch->targets.resize(B * W);
  batch->mask.resize(B * W);
  for (int64_t& p : batch->image_positions)
    if (p >= 0) p = (p / T) * W + p % T;
  batch->T = W;
}

Status ReadLlavaSamples(const LlavaData& data, int64_t first_sample, int64_t B, int64_t T,
                        Batch* batch) {
  Reset(B, T, batch);
  for (int64_t b = 0; b < B && first_sample + b < data.num_samples(); ++b)
    BM_TRY(FillRow(data, first_sample + b, b, batch));
  return Status::Ok();
}

}  // namespace bm::train
