#include "trainer/run/llava_decoder.h"

#include <omp.h>

#include <thread>

#include "trainer/cpu/llava_model.h"
#include "trainer/cpu/ops/matmul.h"

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

}  // namespace

Result<std::unique_ptr<LlavaDecoder>> CreateLlavaDecoder(std::string_view device,
                                                         const LlavaConfig& config, int threads) {
  if (device != "cpu")
    return Errorf(ErrorCode::kUnsupported,
                  "device \"{}\": MMMU's greedy decoding of a LLaVA model runs on the cpu only "
                  "so far; set device = \"cpu\"",
                  device);
  BM_TRY(Validate(config));
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(n);
  cpu::SetBlasThreads(n);
  return std::unique_ptr<LlavaDecoder>(std::make_unique<CpuLlavaDecoder>(config));
}

}  // namespace bm::train
