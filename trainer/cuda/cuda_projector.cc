// CudaProjector (cuda_vision_tower.h): LLaVA's "mlp2x_gelu" on the GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_vision_ops.h"
#include "trainer/cuda/cuda_vision_tower.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/memory_plan.h"
#include "trainer/model/llava_layout.h"

namespace bm::train::cuda {

using vision_internal::DeviceParams;
using vision_internal::Linears;

struct CudaProjector::Impl {
  LlavaConfig cfg;
  CudaVisionOptions opt;
  int max_rows = 0;
  ParamLayout layout;
  DeviceParams params;
  std::unique_ptr<DeviceArena> arena;
  std::unique_ptr<Matmul> matmul;
  Linears lin;
  MemoryPlan plan;
  int64_t w1 = 0, b1 = 0, w2 = 0, b2 = 0;
  size_t pre = 0, post = 0, out = 0, dpost = 0, dfeat = 0, bias_scratch = 0, workspace = 0;
  const void* features = nullptr;  // the last Forward's input (the caller's)
  int rows = 0;

  int Cv() const { return static_cast<int>(cfg.vision.hidden); }
  int H() const { return static_cast<int>(cfg.text.hidden); }
  size_t Elem() const { return opt.dtype == DType::kF32 ? 4 : 2; }
  template <typename T>
  T* A(size_t off) const {
    return arena->At<T>(off);
  }

  template <typename T>
  Status Forward() {
    const T* x = static_cast<const T*>(features);
    BM_TRY(lin.Forward<T>(A<T>(pre), x, params.W<T>(w1), params.W<T>(b1), rows, Cv(), H()));
    BM_TRY(GeluErfForward<T>(A<T>(post), A<T>(pre), static_cast<size_t>(rows) * H(), opt.stream));
    return lin.Forward<T>(A<T>(out), A<T>(post), params.W<T>(w2), params.W<T>(b2), rows, H(), H());
  }
  template <typename T>
  Status Backward(const T* dout) {
    const T* x = static_cast<const T*>(features);
    BM_TRY(lin.WeightGrad<T>(params.G(w2), params.G(b2), dout, A<T>(post), rows, H(), H()));
    BM_TRY(lin.InputGrad<T>(A<T>(dpost), dout, params.W<T>(w2), rows, H(), H()));
    BM_TRY(GeluErfBackward<T>(A<T>(dpost), A<T>(dpost), A<T>(pre), static_cast<size_t>(rows) * H(),
                              opt.stream));
    BM_TRY(lin.WeightGrad<T>(params.G(w1), params.G(b1), A<T>(dpost), x, rows, Cv(), H()));
    return lin.InputGrad<T>(A<T>(dfeat), A<T>(dpost), params.W<T>(w1), rows, Cv(), H());
  }
};

CudaProjector::CudaProjector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaProjector::~CudaProjector() = default;

Result<std::unique_ptr<CudaProjector>> CudaProjector::Create(const LlavaConfig& config,
                                                             int max_rows,
                                                             const CudaVisionOptions& options) {
  if (config.projector != kProjectorMlp2xGelu) {
    return Errorf(ErrorCode::kUnsupported, "CUDA projector: projector \"{}\" (only \"{}\")",
                  config.projector, kProjectorMlp2xGelu);
  }
  if (max_rows < 1) {
    return Errorf(ErrorCode::kInvalidArgument, "CUDA projector: max_rows {} (at least 1)",
                  max_rows);
  }
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  p.cfg = config;
  p.opt = options;
  p.max_rows = max_rows;
  p.layout = ProjectorLayout(config);
  auto offset = [&](const std::string& name, int64_t* at) -> Status {
    const ParamTensor* t = p.layout.Find(std::string(kProjectorPrefix) + name);
    if (t == nullptr) {
      return Errorf(ErrorCode::kInternal, "CUDA projector: the layout has no tensor {}{}",
                    kProjectorPrefix, name);
    }
    *at = t->offset;
    return Status::Ok();
  };
  BM_TRY(offset("linear_1.weight", &p.w1));
  BM_TRY(offset("linear_1.bias", &p.b1));
  BM_TRY(offset("linear_2.weight", &p.w2));
  BM_TRY(offset("linear_2.bias", &p.b2));
  BM_TRY(p.params.Allocate(static_cast<size_t>(p.layout.total()), options.dtype));
  const size_t r = max_rows, e = p.Elem();
  p.pre = p.plan.Add("linear_1", r * p.H() * e);
  p.post = p.plan.Add("gelu", r * p.H() * e);
  p.out = p.plan.Add("linear_2", r * p.H() * e);
  p.dpost = p.plan.Add("gelu grad", r * p.H() * e);
  p.dfeat = p.plan.Add("features grad", r * p.Cv() * e);
  p.bias_scratch = p.plan.Add("bias scratch", BiasGradScratchFloats(max_rows, p.H()) * 4);
  p.workspace = p.plan.Add("matmul workspace", Matmul::kDefaultWorkspaceBytes);
  BM_ASSIGN_OR_RETURN(p.arena, DeviceArena::Create(p.plan));
  BM_ASSIGN_OR_RETURN(p.matmul,
                      Matmul::Create(p.A<char>(p.workspace), Matmul::kDefaultWorkspaceBytes));
  p.lin.matmul = p.matmul.get();
  p.lin.stream = options.stream;
  p.lin.dtype = options.dtype;
  p.lin.bias_scratch = p.A<float>(p.bias_scratch);
  return std::unique_ptr<CudaProjector>(new CudaProjector(std::move(impl)));
}

const train::ParamLayout& CudaProjector::layout() const { return impl_->layout; }
Status CudaProjector::SetParameters(std::span<const float> flat) {
  return impl_->params.Set(flat, impl_->opt.stream);
}
Status CudaProjector::GetParameters(std::vector<float>* flat) {
  return impl_->params.GetMasters(flat, impl_->opt.stream);
}
Status CudaProjector::GetGradients(std::vector<float>* flat) {
  return impl_->params.GetGradients(flat, impl_->opt.stream);
}
Status CudaProjector::ZeroGradients() { return impl_->params.ZeroGradients(impl_->opt.stream); }
Status CudaProjector::RefreshWorkingCopy() {
  return impl_->params.RefreshWorkingCopy(impl_->opt.stream);
}
float* CudaProjector::master() { return impl_->params.master(); }
float* CudaProjector::grad() { return impl_->params.grad(); }
void CudaProjector::Freeze() { impl_->params.Freeze(); }
size_t CudaProjector::device_bytes() const {
  return impl_->params.device_bytes() + impl_->arena->bytes();
}
std::string CudaProjector::memory_summary() const {
  return impl_->params.Summary() + impl_->plan.Summary();
}

Status CudaProjector::Forward(const void* features, int rows) {
  if (rows < 1 || rows > impl_->max_rows) {
    return Errorf(ErrorCode::kInvalidArgument, "CUDA projector: {} rows (1 to max_rows = {})", rows,
                  impl_->max_rows);
  }
  impl_->features = features;
  impl_->rows = rows;
  return WithElementType(impl_->opt.dtype, [&](auto t) { return impl_->Forward<decltype(t)>(); });
}

const void* CudaProjector::output() const { return impl_->A<char>(impl_->out); }
const void* CudaProjector::dfeatures() const { return impl_->A<char>(impl_->dfeat); }

Status CudaProjector::Backward(const void* doutput) {
  if (impl_->rows == 0) {
    return Status(ErrorCode::kInvalidArgument, "CUDA projector: Backward before Forward");
  }
  if (!impl_->params.grad()) {
    return Status(ErrorCode::kInvalidArgument,
                  "CUDA projector: Backward after Freeze (a frozen projector)");
  }
  return WithElementType(impl_->opt.dtype, [&](auto t) {
    using T = decltype(t);
    return impl_->Backward<T>(static_cast<const T*>(doutput));
  });
}

}  // namespace bm::train::cuda
