#include "trainer/run/llava_decoder.h"

#include <omp.h>

#include <thread>

#include "trainer/cpu/llava_model.h"
#include "trainer/cpu/ops/matmul.h"
#ifdef BENCHMAKE_HAVE_CUDA
#include "trainer/cuda/cuda_llava_trainer.h"
#endif

namespace bm::train {
namespace {

class CpuLlavaDecoder final : public LlavaDecoder {
 public:
  explicit CpuLlavaDecoder(const LlavaConfig& config) : model_(config, 1, config.text.max_seq, 1) {}
  Status SetParameters(std::span<const float> whole) override {
    return model_.SetParameters(whole);
  }
  Result<std::vector<int32_t>> GenerateGreedy(std::span<const int32_t> prompt,
                                              const float* pixel_values,
                                              const int64_t* image_positions, int64_t images,
                                              int64_t max_new_tokens, int32_t eos_id,
                                              bool* context_full) override {
    return model_.GenerateGreedy(prompt, pixel_values, image_positions, images, max_new_tokens,
                                 eos_id, context_full);
  }

 private:
  cpu::LlavaModel<float> model_;
};

#ifdef BENCHMAKE_HAVE_CUDA
// A CudaLlavaTrainer with every part frozen (the LM's working weights only, no gradients or
// optimizer state), planned for one sequence of max_seq tokens and one image.
class CudaLlavaDecoder final : public LlavaDecoder {
 public:
  explicit CudaLlavaDecoder(std::unique_ptr<cuda::CudaLlavaTrainer> model)
      : model_(std::move(model)) {}
  std::optional<GpuDevice> device() const override {
    return GpuDevice{model_->device_name(), model_->Memory()};
  }
  Status SetParameters(std::span<const float> whole) override {
    return model_->SetParameters(whole);
  }
  Result<std::vector<int32_t>> GenerateGreedy(std::span<const int32_t> prompt,
                                              const float* pixel_values,
                                              const int64_t* image_positions, int64_t images,
                                              int64_t max_new_tokens, int32_t eos_id,
                                              bool* context_full) override {
    return model_->GenerateGreedy(prompt, pixel_values, image_positions, images, max_new_tokens,
                                  eos_id, context_full);
  }

 private:
  std::unique_ptr<cuda::CudaLlavaTrainer> model_;
};
#endif

}  // namespace

Result<std::unique_ptr<LlavaDecoder>> CreateLlavaDecoder(std::string_view device,
                                                         const LlavaConfig& config,
                                                         Precision precision, int threads) {
  BM_TRY(Validate(config));
  if (device == "cuda") {
#ifdef BENCHMAKE_HAVE_CUDA
    BackendOptions o;
    o.max_batch = 1;
    o.max_seq = config.text.max_seq;
    o.precision = precision;
    o.attention = "flash";  // cuDNN would build a graph for every new width
    o.recompute = true;     // no backward: keep each layer's input only, not its activations
    BM_ASSIGN_OR_RETURN(
        std::unique_ptr<cuda::CudaLlavaTrainer> model,
        cuda::CudaLlavaTrainer::Create(config, o, /*max_images=*/1, {false, false, false}));
    return std::unique_ptr<LlavaDecoder>(std::make_unique<CudaLlavaDecoder>(std::move(model)));
#else
    return Status(ErrorCode::kUnsupported,
                  "device \"cuda\": this build has cpu only (no CUDA); MMMU decodes on the cpu");
#endif
  }
  if (device != "cpu")
    return Errorf(ErrorCode::kUnsupported,
                  "device \"{}\": MMMU's greedy decoding of a LLaVA model runs on \"cpu\" or "
                  "\"cuda\"",
                  device);
  if (precision != Precision::kFp32)
    return Status(ErrorCode::kUnsupported, "precision: MMMU on the cpu is fp32 only");
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(n);
  cpu::SetBlasThreads(n);
  return std::unique_ptr<LlavaDecoder>(std::make_unique<CpuLlavaDecoder>(config));
}

}  // namespace bm::train
