#include "trainer/cuda/cuda_model.h"

#include "trainer/cuda/cuda_model_impl.h"

namespace bm::train::cuda {

// ---- CudaModel

CudaModel::CudaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaModel::~CudaModel() {
  if (!impl_) return;
  if (impl_->stream) cudaStreamSynchronize(impl_->stream);
  impl_->matmul.reset();
  impl_->arena.reset();
  for (cudaEvent_t e : impl_->event_pool) cudaEventDestroy(e);
  if (impl_->h_ints) cudaFreeHost(impl_->h_ints);
  if (impl_->h_floats) cudaFreeHost(impl_->h_floats);
  if (impl_->staged) cudaEventDestroy(impl_->staged);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

Result<std::unique_ptr<CudaModel>> CudaModel::Create(const ModelSpec& model, const RunSpec& run) {
  if (model.heads <= 0 || model.hidden % model.heads != 0 || model.kv_heads <= 0 ||
      model.heads % model.kv_heads != 0 || run.micro_batch <= 0 || run.seq <= 0 ||
      model.head_dim() % 8 != 0) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: hidden {} heads {} kv_heads {} (head size must be a multiple "
                  "of 8), micro_batch {} seq {}",
                  model.hidden, model.heads, model.kv_heads, run.micro_batch, run.seq);
  }
  if (model.family == Family::kGpt && run.seq > model.max_positions) {
    return Errorf(ErrorCode::kInvalidArgument, "seq {} exceeds the {} learned positions", run.seq,
                  model.max_positions);
  }
  int count = 0;
  BM_CUDA_CHECK(cudaGetDeviceCount(&count), "counting GPUs");
  if (count == 0) return Errorf(ErrorCode::kUnavailable, "no CUDA device");
  auto m = std::unique_ptr<CudaModel>(new CudaModel(std::make_unique<Impl>(model, run)));
  Impl& s = *m->impl_;
  BM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "stream");
  BM_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming), "event");
  BM_TRY(s.Plan());
  size_t n = s.MaxN();
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_ints), (5 * n + 1) * 4),
                "pinned staging {} ints", 5 * n + 1);
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_floats), (n + 16) * 4),
                "pinned staging {} floats", n + 16);
  BM_ASSIGN_OR_RETURN(s.matmul, Matmul::Create(s.arena->At<void>(s.workspace),
                                               Matmul::kDefaultWorkspaceBytes, run.matmul_tuning));
  BM_CUDA_CHECK(cudaMemsetAsync(s.A<char>(s.p32), 0, s.memory.plan_bytes, s.stream),
                "zeroing the arena ({} bytes)", s.memory.plan_bytes);
  std::vector<float> table = RopeTable(run.seq, model.head_dim(), model.rope_theta);
  BM_CUDA_CHECK(cudaMemcpyAsync(s.A<float>(s.rope), table.data(), table.size() * 4,
                                cudaMemcpyHostToDevice, s.stream),
                "rope table");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "setup");
  BM_ASSIGN_OR_RETURN(s.memory.device_used_bytes, DeviceArena::DeviceUsedBytes());
  return m;
}

const ParamLayout& CudaModel::layout() const { return impl_->layout; }
const MemoryReport& CudaModel::memory() const { return impl_->memory; }

Status CudaModel::SetParameters(const std::vector<float>& flat) {
  Impl& s = *impl_;
  size_t P = s.layout.total();
  if (flat.size() != P) {
    return Errorf(ErrorCode::kInvalidArgument, "{} parameters given, layout has {}", flat.size(),
                  P);
  }
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.p32), flat.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "parameters {}", P);
  if (s.Lowp()) {
    BM_TRY(WithElementType(s.run.dtype, [&](auto tag) {
      using T = decltype(tag);
      return CastF32<T>(s.A<T>(s.plp), s.A<float>(s.p32), P, s.stream);
    }));
  }
  return Synchronize();
}

Status CudaModel::GetParameters(std::vector<float>* flat) {
  return impl_->CopyOut(impl_->p32, flat);
}
Status CudaModel::GetGradients(std::vector<float>* flat) {
  BM_TRY(impl_->ZeroPendingGradients());
  return impl_->CopyOut(impl_->grad, flat);
}
Status CudaModel::GetOptimizerState(std::vector<float>* m, std::vector<float>* v) {
  BM_TRY(impl_->CopyOut(impl_->adam_m, m));
  return impl_->CopyOut(impl_->adam_v, v);
}
Status CudaModel::SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v) {
  Impl& s = *impl_;
  size_t P = s.layout.total();
  if (m.size() != P || v.size() != P) {
    return Errorf(ErrorCode::kInvalidArgument, "optimizer state of {}/{} floats, layout has {}",
                  m.size(), v.size(), P);
  }
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.adam_m), m.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "adam m");
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.adam_v), v.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "adam v");
  return Synchronize();
}

Status CudaModel::ZeroGradients() {
  impl_->zero_pending = true;  // done by the next training pass (Impl::Run)
  impl_->norm_fresh = false;
  return Status::Ok();
}

Result<double> CudaModel::ForwardBackward(const TokenBatch& batch, float grad_scale) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "ForwardBackward needs targets");
  BM_TRY(s.Stage(batch, true));
  BM_TRY(s.Run(grad_scale, Mode::kTrain));
  float* out = s.h_floats + s.MaxN();
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.loss_sum), 4, cudaMemcpyDeviceToHost, s.stream),
                "loss");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "forward-backward B={} T={}", batch.batch,
                batch.seq);
  if (s.run.profile) BM_TRY(s.CollectPhases());
  return static_cast<double>(*out);
}

Result<double> CudaModel::GradNorm() {
  Impl& s = *impl_;
  BM_TRY(s.ZeroPendingGradients());
  BM_TRY(GradSumSquares(s.A<float>(s.norm_sq), s.A<float>(s.norm_partials), s.A<float>(s.grad),
                        s.layout.total(), s.stream));
  float* out = s.h_floats + s.MaxN() + 1;
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.norm_sq), 4, cudaMemcpyDeviceToHost, s.stream),
                "norm");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "grad norm");
  s.norm_fresh = true;  // OptimizerStep clips with it
  return std::sqrt(static_cast<double>(*out));
}

Status CudaModel::OptimizerStep(const AdamWHyper& hyper) {
  Impl& s = *impl_;
  BM_TRY(s.ZeroPendingGradients());
  size_t P = s.layout.total();
  if (!s.norm_fresh) {
    BM_TRY(s.Phase("optimizer", [&] {
      return GradSumSquares(s.A<float>(s.norm_sq), s.A<float>(s.norm_partials), s.A<float>(s.grad),
                            P, s.stream);
    }));
  }
  size_t split = s.layout.decay_end();
  AdamWHyper no_decay = hyper;
  no_decay.weight_decay = 0.0f;
  // The 16-bit copy's type; fp32 mode has none (a null bf16 pointer).
  return WithElementType(s.run.dtype, [&](auto tag) {
    using L = std::conditional_t<std::is_same_v<decltype(tag), float>, bf16, decltype(tag)>;
    L* lowp = s.Lowp() ? s.A<L>(s.plp) : nullptr;
    BM_TRY(s.Phase("optimizer", [&] {
      return AdamWUpdate<L>(s.A<float>(s.p32), lowp, s.A<float>(s.adam_m), s.A<float>(s.adam_v),
                            s.A<float>(s.grad), s.A<float>(s.norm_sq), hyper, split, s.stream);
    }));
    return s.Phase("optimizer", [&] {
      return AdamWUpdate<L>(s.A<float>(s.p32) + split, lowp ? lowp + split : nullptr,
                            s.A<float>(s.adam_m) + split, s.A<float>(s.adam_v) + split,
                            s.A<float>(s.grad) + split, s.A<float>(s.norm_sq), no_decay, P - split,
                            s.stream);
    });
  });
}

Status CudaModel::TokenLosses(const TokenBatch& batch, float* losses) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "TokenLosses needs targets");
  TokenBatch all = batch;
  all.mask = nullptr;  // every position's loss
  BM_TRY(s.Stage(all, false));
  BM_TRY(s.Run(0.0f, Mode::kLoss));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(losses, s.A<float>(s.losses), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "token losses");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "token losses B={} T={}", batch.batch, batch.seq);
  return Status::Ok();
}

Status CudaModel::NextTokenArgmax(const int32_t* tokens, int batch, int seq, int32_t* out) {
  Impl& s = *impl_;
  TokenBatch b;
  b.tokens = tokens, b.batch = batch, b.seq = seq;
  BM_TRY(s.Stage(b, false));
  BM_TRY(s.Run(0.0f, Mode::kArgmax));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(out, s.A<int>(s.argmax), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "argmax");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "argmax B={} T={}", batch, seq);
  return Status::Ok();
}

std::map<std::string, double> CudaModel::PhaseTimes() const { return impl_->phase_ms; }
const std::vector<std::string>& CudaModel::MatmulTuningLog() const {
  return impl_->matmul->tuning_log();
}
void CudaModel::ResetPhaseTimes() { impl_->phase_ms.clear(); }

Status CudaModel::Synchronize() {
  BM_CUDA_CHECK(cudaStreamSynchronize(impl_->stream), "synchronize");
  if (impl_->run.profile) BM_TRY(impl_->CollectPhases());
  return Status::Ok();
}

}  // namespace bm::train::cuda
