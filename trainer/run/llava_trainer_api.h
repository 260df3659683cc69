// LlavaTrainerApi: what RunLlavaTraining drives, whichever device trains — the CPU's
// LlavaTrainer (trainer/cpu/llava_trainer.h) or the CUDA one (trainer/cuda/cuda_llava_trainer.h),
// which have the same calls with the same meaning. CreateLlavaTrainer picks by run.device
// ("cpu", "cuda" in CUDA builds) and wraps the device's class; neither class changes for it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/llava_model.h"
#include "trainer/cpu/llava_trainer.h"
#include "trainer/model/vision_config.h"

namespace bm::train {

class LlavaTrainerApi {
 public:
  virtual ~LlavaTrainerApi() = default;
  // nullopt on the CPU (the loop reads the process's memory and the CPU's name itself).
  virtual std::optional<GpuDevice> device() const { return std::nullopt; }
  virtual Status SetParameters(std::span<const float> whole) = 0;
  virtual Status GetParameters(std::span<float> whole) = 0;  // empty: takes part only
  virtual Status ZeroGrad() = 0;
  virtual Result<LossSum> ForwardBackward(const cpu::LlavaMicroBatch& batch, float loss_scale,
                                          bool last) = 0;
  virtual Result<float> GradNorm() = 0;
  virtual Status OptimizerStep(const AdamWStep& step) = 0;
};

// "cpu": fp32 only; "cuda": fp32 or bf16 (kUnsupported in a build without CUDA, naming it).
// freeze: the parts that do not train (trainer/model/llava_freeze.h).
Result<std::unique_ptr<LlavaTrainerApi>> CreateLlavaTrainer(std::string_view device,
                                                            const LlavaConfig& config,
                                                            const BackendOptions& options,
                                                            int64_t max_images,
                                                            const LlavaFreeze& freeze = {});

}  // namespace bm::train
