#include "trainer/run/llava_trainer_api.h"

#include "trainer/cpu/llava_trainer.h"
#ifdef BENCHMAKE_HAVE_CUDA
#include "trainer/cuda/cuda_llava_trainer.h"
#endif

namespace bm::train {
namespace {

// Any class with the API's calls behind the API.
template <typename Trainer>
class Wrapped final : public LlavaTrainerApi {
 public:
  explicit Wrapped(std::unique_ptr<Trainer> t) : t_(std::move(t)) {}
  Status SetParameters(std::span<const float> whole) override { return t_->SetParameters(whole); }
  Status GetParameters(std::span<float> whole) override { return t_->GetParameters(whole); }
  Status ZeroGrad() override { return t_->ZeroGrad(); }
  Result<LossSum> ForwardBackward(const cpu::LlavaMicroBatch& batch, float loss_scale,
                                  bool last) override {
    return t_->ForwardBackward(batch, loss_scale, last);
  }
  Result<float> GradNorm() override { return t_->GradNorm(); }
  Status OptimizerStep(const AdamWStep& step) override { return t_->OptimizerStep(step); }
  std::optional<GpuDevice> device() const override {
    if constexpr (requires(const Trainer& t) { t.Memory(); }) {
      return GpuDevice{t_->device_name(), t_->Memory()};
    } else {
      return std::nullopt;
    }
  }

 private:
  std::unique_ptr<Trainer> t_;
};

template <typename Trainer>
Result<std::unique_ptr<LlavaTrainerApi>> Wrap(Result<std::unique_ptr<Trainer>> t) {
  if (!t.ok()) return t.status();
  return std::unique_ptr<LlavaTrainerApi>(new Wrapped<Trainer>(std::move(*t)));
}

}  // namespace

Result<std::unique_ptr<LlavaTrainerApi>> CreateLlavaTrainer(std::string_view device,
                                                            const LlavaConfig& config,
                                                            const BackendOptions& options,
                                                            int64_t max_images,
                                                            const LlavaFreeze& freeze) {
  if (device == "cpu") return Wrap(cpu::LlavaTrainer::Create(config, options, max_images, freeze));
#ifdef BENCHMAKE_HAVE_CUDA
  if (device == "cuda")
    return Wrap(
        cuda::CudaLlavaTrainer::Create(config, options, max_images, cpu::TrainableOf(freeze)));
  return Errorf(ErrorCode::kUnsupported, "LLaVA training on device \"{}\": cpu or cuda", device);
#else
  return Errorf(ErrorCode::kUnsupported,
                "LLaVA training on device \"{}\": this build has cpu only (no CUDA)", device);
#endif
}

}  // namespace bm::train
