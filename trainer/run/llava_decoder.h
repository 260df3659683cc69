// LlavaDecoder: the forward-only side of a LLaVA model that MMMU's evaluation drives
// (trainer/run/llava_mmmu.h), beside LlavaTrainerApi (the training side). One greedy decode
// of one prompt with its image rows spliced in; see cpu::LlavaModel::GenerateGreedy for the
// contract (stopping rules, errors). CreateLlavaDecoder picks by device: "cpu" wraps
// cpu::LlavaModel<float>; "cuda" is refused (kUnsupported, naming the device) until
// CudaLlavaTrainer has a forward-only path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "trainer/model/vision_config.h"

namespace bm::train {

class LlavaDecoder {
 public:
  virtual ~LlavaDecoder() = default;
  // The whole model (LlavaLayout order).
  virtual Status SetParameters(std::span<const float> whole) = 0;
  // prompt: ids (0 at the image positions), pixel_values [images, 3, S, S],
  // image_positions [images * image_tokens]; returns the new tokens.
  virtual Result<std::vector<int32_t>> GenerateGreedy(std::span<const int32_t> prompt,
                                                      const float* pixel_values,
                                                      const int64_t* image_positions,
                                                      int64_t images, int64_t max_new_tokens,
                                                      int32_t eos_id, bool* context_full) = 0;
};

// A decoder of sequences up to config.text.max_seq tokens with at most one image.
// threads: CPU threads (0: all cores).
Result<std::unique_ptr<LlavaDecoder>> CreateLlavaDecoder(std::string_view device,
                                                         const LlavaConfig& config, int threads);

}  // namespace bm::train
