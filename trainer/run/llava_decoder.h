// LlavaDecoder: the forward-only side of a LLaVA model that MMMU's evaluation drives
// (trainer/run/llava_mmmu.h), beside LlavaTrainerApi (the training side). One greedy decode
// of one prompt with its image rows spliced in; see cpu::LlavaModel::GenerateGreedy for the
// contract (stopping rules, errors). CreateLlavaDecoder picks by device: "cpu" wraps
// cpu::LlavaModel<float> (fp32); "cuda" a cuda::CudaLlavaTrainer with every part frozen
// (fp32 or bf16; kUnsupported in a build without CUDA, kUnavailable without a GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/model/vision_config.h"

namespace bm::train {

class LlavaDecoder {
 public:
  virtual ~LlavaDecoder() = default;
  // nullopt on the CPU (the caller reads the process's memory and the CPU's name itself).
  virtual std::optional<GpuDevice> device() const { return std::nullopt; }
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
// threads: CPU threads (0: all cores; the cpu's).
Result<std::unique_ptr<LlavaDecoder>> CreateLlavaDecoder(std::string_view device,
                                                         const LlavaConfig& config,
                                                         Precision precision, int threads);

}  // namespace bm::train
