#include "trainer/cpu/cpu_backend.h"

#include <omp.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>

#include "trainer/cpu/model.h"
#include "trainer/cpu/ops/adamw.h"
#include "trainer/cpu/ops/matmul.h"

namespace bm::train::cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string_view device() const override { return "cpu"; }
  std::string device_name() const override {
    return fmt::format("{}, {} threads", CpuModelName(), threads_);
  }

  Status Init(const ModelConfig& model, const BackendOptions& options) override {
    BM_TRY(Validate(model));
    if (options.max_batch < 1 || options.max_seq < 1 || options.max_seq > model.max_seq)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cpu backend: batch {} and sequence {} must be >= 1, sequence <= max_seq {}",
                    options.max_batch, options.max_seq, model.max_seq);
    if (options.precision != Precision::kFp32)
      return Status(ErrorCode::kUnsupported,
                    "the cpu backend computes in fp32 only (precision = \"fp32\")");
    threads_ = options.threads > 0 ? options.threads
                                   : static_cast<int>(std::thread::hardware_concurrency());
    omp_set_num_threads(threads_);
    SetBlasThreads(threads_);
    options_ = options;
    model_ = std::make_unique<Model<float>>(model, options.max_batch, options.max_seq);
    m_.assign(model_->params().size(), 0.0f);
    v_.assign(model_->params().size(), 0.0f);
    return Status::Ok();
  }

  Status SetParameters(std::span<const float> params) override {
    BM_TRY(CheckSize("SetParameters", params.size()));
    std::copy(params.begin(), params.end(), model_->params().begin());
    return Status::Ok();
  }
  Status GetParameters(std::span<float> params) const override {
    BM_TRY(CheckSize("GetParameters", params.size()));
    std::copy(model_->params().begin(), model_->params().end(), params.begin());
    return Status::Ok();
  }
  Status GetGradients(std::span<float> grads) const override {
    BM_TRY(CheckSize("GetGradients", grads.size()));
    std::copy(model_->grads().begin(), model_->grads().end(), grads.begin());
    return Status::Ok();
  }
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const override {
    BM_TRY(CheckSize("GetOptimizerState", m.size()));
    BM_TRY(CheckSize("GetOptimizerState", v.size()));
    std::copy(m_.begin(), m_.end(), m.begin());
    std::copy(v_.begin(), v_.end(), v.begin());
    return Status::Ok();
  }
  Status SetOptimizerState(std::span<const float> m, std::span<const float> v) override {
    BM_TRY(CheckSize("SetOptimizerState", m.size()));
    BM_TRY(CheckSize("SetOptimizerState", v.size()));
    std::copy(m.begin(), m.end(), m_.begin());
    std::copy(v.begin(), v.end(), v_.begin());
    return Status::Ok();
  }

  Status ZeroGrad() override {
    if (!model_) return NotInitialized("ZeroGrad");
    std::fill(model_->grads().begin(), model_->grads().end(), 0.0f);
    return Status::Ok();
  }

  Result<LossSum> ForwardBackward(const MicroBatch& batch, float loss_scale) override {
    BM_TRY(CheckBatch("ForwardBackward", batch.inputs, batch.targets, batch.B, batch.T));
    LossSum loss;
    model_->ForwardBackward(batch.inputs, batch.targets, batch.loss_mask, batch.B, batch.T,
                            loss_scale, &loss.sum, &loss.count);
    return loss;
  }

  Result<float> GradNorm() override {
    if (!model_) return NotInitialized("GradNorm");
    return static_cast<float>(std::sqrt(
        SumOfSquares(model_->grads().data(), static_cast<int64_t>(model_->grads().size()))));
  }

  Status OptimizerStep(const AdamWStep& step) override {
    if (!model_) return NotInitialized("OptimizerStep");
    BM_ASSIGN_OR_RETURN(float norm, GradNorm());
    // grad_scale (1 / the loss scale) folds into the clipping factor: one pass.
    const float scale = ClipScale(norm * step.grad_scale, step.grad_clip) * step.grad_scale;
    for (const ParamTensor& t : model_->layout().tensors()) {
      AdamWUpdate(model_->params().data() + t.offset, model_->grads().data() + t.offset,
                  m_.data() + t.offset, v_.data() + t.offset, t.numel, step.lr, step.beta1,
                  step.beta2, step.eps, t.weight_decay ? step.weight_decay : 0.0f, scale,
                  step.step);
    }
    return Status::Ok();
  }

  Status TokenLosses(const MicroBatch& batch, float* losses) override {
    BM_TRY(CheckBatch("TokenLosses", batch.inputs, batch.targets, batch.B, batch.T));
    model_->TokenLosses(batch.inputs, batch.targets, batch.B, batch.T, losses);
    return Status::Ok();
  }

  Status NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) override {
    BM_TRY(CheckBatch("NextTokenArgmax", inputs, nullptr, B, T));
    model_->NextTokenArgmax(inputs, B, T, argmax);
    return Status::Ok();
  }

  Status LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B, int64_t T,
                         int32_t* argmax) override {
    BM_TRY(CheckBatch("LastTokenArgmax", inputs, nullptr, B, T));
    for (int64_t b = 0; b < B; ++b)
      if (lengths[b] < 1 || lengths[b] > T)
        return Errorf(ErrorCode::kInvalidArgument,
                      "cpu backend: LastTokenArgmax: row {} has length {}, outside [1, {}]", b,
                      lengths[b], T);
    model_->LastTokenArgmax(inputs, lengths, B, T, argmax);
    return Status::Ok();
  }

  MemoryStats Memory() const override {
    MemoryStats s;
    if (model_) s.peak_bytes = model_->bytes() + static_cast<int64_t>((m_.size() + v_.size()) * 4);
    s.device_total_bytes = PhysicalMemoryBytes();
    return s;
  }

 private:
  static Status NotInitialized(std::string_view call) {
    return Errorf(ErrorCode::kInternal, "cpu backend: {} before Init", call);
  }
  Status CheckSize(std::string_view call, size_t n) const {
    if (!model_) return NotInitialized(call);
    if (n != model_->params().size())
      return Errorf(ErrorCode::kInvalidArgument,
                    "cpu backend: {}: buffer of {} floats, model has {}", call, n,
                    model_->params().size());
    return Status::Ok();
  }
  Status CheckBatch(std::string_view call, const int32_t* inputs, const int32_t* targets, int64_t B,
                    int64_t T) const {
    if (!model_) return NotInitialized(call);
    if (B < 1 || T < 1 || B > options_.max_batch || T > options_.max_seq)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cpu backend: {}: batch {}x{} outside the allocated {}x{}", call, B, T,
                    options_.max_batch, options_.max_seq);
    const int64_t V = model_->config().vocab;
    for (int64_t i = 0; i < B * T; ++i) {
      if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V)))
        return Errorf(ErrorCode::kInvalidArgument,
                      "cpu backend: {}: token id {} at position {} outside the vocabulary [0, {})",
                      call, (inputs[i] < 0 || inputs[i] >= V) ? inputs[i] : targets[i], i, V);
    }
    return Status::Ok();
  }

  BackendOptions options_;
  int threads_ = 1;
  std::unique_ptr<Model<float>> model_;
  std::vector<float> m_, v_;
};

}  // namespace

Backend* CreateCpuBackend() { return new CpuBackend(); }

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
      }
    }
  }
  return "unknown CPU";
}

int64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size : 0;
}

}  // namespace bm::train::cpu
