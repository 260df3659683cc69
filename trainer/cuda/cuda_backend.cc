#include "trainer/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <fstream>
#include <regex>
#include <vector>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/probe.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/layout.h"

namespace bm::train::cuda {
namespace {

// One tensor's place in both layouts. The GPU layout fuses q|k|v and gate|up into single
// tensors; the trainer's keeps them as consecutive tensors, so the fused tensor maps to the
// first one's offset.
struct Span {
  size_t gpu = 0, host = 0, numel = 0;
};

Result<std::vector<Span>> MapLayouts(const cuda::ParamLayout& gpu, const train::ParamLayout& host) {
  std::vector<Span> spans;
  size_t mapped = 0;
  for (const cuda::ParamTensor& t : gpu.tensors()) {
    std::string name = t.name;
    size_t pos;
    if ((pos = name.find("qkv_proj")) != std::string::npos) name.replace(pos, 8, "q_proj");
    if ((pos = name.find("gate_up_proj")) != std::string::npos) name.replace(pos, 12, "gate_proj");
    const train::ParamTensor* h = host.Find(name);
    if (!h) {
      return Errorf(ErrorCode::kInternal, "CUDA layout tensor {} has no trainer tensor {}", t.name,
                    name);
    }
    if (static_cast<size_t>(h->offset) + t.numel() > static_cast<size_t>(host.total())) {
      return Errorf(ErrorCode::kInternal, "CUDA tensor {} ({} floats) overruns the trainer layout",
                    t.name, t.numel());
    }
    spans.push_back({t.offset, static_cast<size_t>(h->offset), t.numel()});
    mapped += t.numel();
  }
  if (mapped != static_cast<size_t>(host.total())) {
    return Errorf(ErrorCode::kInternal, "CUDA layout covers {} of the trainer's {} parameters",
                  mapped, host.total());
  }
  return spans;
}

// The kernel driver's version ("580.159.04"): /proc/driver/nvidia/version, else
// /sys/module/nvidia/version (some VMs hide the former); "" when neither is readable.
std::string DriverVersion() {
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string line;
  std::smatch m;
  if (std::getline(proc, line) &&
      std::regex_search(line, m, std::regex("Kernel Module\\s+([0-9]+(\\.[0-9]+)+)"))) {
    return m[1];
  }
  std::ifstream sys("/sys/module/nvidia/version");
  if (std::getline(sys, line) && std::regex_match(line, std::regex("[0-9]+(\\.[0-9]+)+"))) {
    return line;
  }
  return "";
}

class CudaBackend final : public Backend {
 public:
  std::string_view device() const override { return "cuda"; }
  std::string device_name() const override { return name_; }

  Status Init(const ModelConfig& c, const BackendOptions& o) override {
    BM_TRY(Validate(c));
    bool gpt = c.family == train::Family::kGpt;
    if (c.biases != gpt || c.tied_embeddings != gpt) {
      return Errorf(ErrorCode::kUnsupported,
                    "the cuda backend trains {} with biases = {} and tied_embeddings = {} only",
                    FamilyName(c.family), gpt, gpt);
    }
    if (gpt && c.norm_eps != 1e-5) {
      return Errorf(ErrorCode::kUnsupported,
                    "the cuda backend's LayerNorm (gpt) uses norm_eps = 1e-5 (got {})", c.norm_eps);
    }
    if (o.max_batch < 1 || o.max_seq < 1 || o.max_seq > c.max_seq) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "cuda backend: batch {} and sequence {} must be >= 1, sequence <= max_seq {}",
                    o.max_batch, o.max_seq, c.max_seq);
    }
    // Tensor and pipeline parallelism: the cpu backend has them (trainer/cpu/pipeline.h,
    // trainer/model/shard.h); this backend does not yet.
    if ((o.tp && o.tp->size() > 1) || (o.pp && o.pp->size() > 1)) {
      return Errorf(ErrorCode::kUnsupported,
                    "the cuda backend does not implement tensor or pipeline parallelism yet "
                    "(TP{} PP{}); use TP1PP1 with DP and ZeRO, or device = \"cpu\"",
                    o.tp ? o.tp->size() : 1, o.pp ? o.pp->size() : 1);
    }
    BM_CUDA_CHECK(cudaSetDevice(o.device_index), "selecting GPU {}", o.device_index);
    cudaDeviceProp props{};
    BM_CUDA_CHECK(cudaGetDeviceProperties(&props, o.device_index), "GPU {}", o.device_index);
    name_ = props.name;
    total_bytes_ = static_cast<int64_t>(props.totalGlobalMem);
    ModelSpec spec;
    spec.family = gpt ? cuda::Family::kGpt : cuda::Family::kLlama;
    spec.vocab = static_cast<int>(c.vocab);
    spec.hidden = static_cast<int>(c.hidden);
    spec.layers = static_cast<int>(c.layers);
    spec.heads = static_cast<int>(c.heads);
    spec.kv_heads = static_cast<int>(c.kv_heads);
    spec.ffn = static_cast<int>(c.ffn_hidden);
    spec.max_positions = static_cast<int>(c.max_seq);
    spec.tied = c.tied_embeddings;
    spec.rope_theta = c.rope_theta;
    spec.norm_eps = static_cast<float>(c.norm_eps);
    if (o.zero < 0 || o.zero > 3)
      return Errorf(ErrorCode::kInvalidArgument, "zero = {}: the ZeRO stage is 0, 1, 2 or 3",
                    o.zero);
    if (o.dp && !o.dp->device() && o.dp->size() > 1)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cuda backend: {} ranks need a device communicator (NCCL), not {}",
                    o.dp->size(), o.dp->transport());
    RunSpec run;
    run.comm = o.dp;
    run.zero = o.zero;
    run.micro_batch = static_cast<int>(o.max_batch);
    run.seq = static_cast<int>(o.max_seq);
    run.dtype = o.precision == Precision::kBf16   ? DType::kBF16
                : o.precision == Precision::kFp16 ? DType::kF16
                                                  : DType::kF32;
    run.recompute = o.recompute;
    // "auto": cuDNN's fused attention (deterministic, measured faster: docs/PERFORMANCE.md)
    // when it is built in and takes this shape in bf16 or fp16; otherwise our flash kernels.
    AttentionShape shape{run.micro_batch,         run.seq,         spec.heads,
                         spec.kv_heads,           spec.head_dim(), run.attention_chunk,
                         run.dtype == DType::kF16};
    if (o.attention == "cudnn") {
      if (!CudnnAttentionBuilt())
        return Status(ErrorCode::kUnsupported,
                      "attention = \"cudnn\": this build has no cuDNN; use \"flash\"");
      run.attention = AttentionImpl::kCudnn;
    } else if (o.attention == "auto") {
      if (run.dtype != DType::kF32 && CudnnAttentionUsable(shape))
        run.attention = AttentionImpl::kCudnn;
    } else if (o.attention != "flash") {
      return Errorf(ErrorCode::kInvalidArgument,
                    "attention must be \"auto\", \"flash\" or \"cudnn\", not \"{}\"", o.attention);
    }
    BM_ASSIGN_OR_RETURN(model_, CudaModel::Create(spec, run));
    host_layout_ = std::make_unique<train::ParamLayout>(c);
    BM_ASSIGN_OR_RETURN(spans_, MapLayouts(model_->layout(), *host_layout_));
    return Status::Ok();
  }

  Status SetParameters(std::span<const float> params) override {
    BM_TRY(Check("SetParameters", params.size()));
    return model_->SetParameters(ToGpu(params));
  }
  Status GetParameters(std::span<float> params) const override {
    BM_TRY(Check("GetParameters", params.size()));
    std::vector<float> flat;
    BM_TRY(model_->GetParameters(&flat));
    FromGpu(flat, params);
    return Status::Ok();
  }
  Status GetGradients(std::span<float> grads) const override {
    BM_TRY(Check("GetGradients", grads.size()));
    std::vector<float> flat;
    BM_TRY(model_->GetGradients(&flat));
    FromGpu(flat, grads);
    return Status::Ok();
  }
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const override {
    BM_TRY(Check("GetOptimizerState", m.size()));
    BM_TRY(Check("GetOptimizerState", v.size()));
    std::vector<float> gm, gv;
    BM_TRY(model_->GetOptimizerState(&gm, &gv));
    FromGpu(gm, m);
    FromGpu(gv, v);
    return Status::Ok();
  }
  Status SetOptimizerState(std::span<const float> m, std::span<const float> v) override {
    BM_TRY(Check("SetOptimizerState", m.size()));
    BM_TRY(Check("SetOptimizerState", v.size()));
    return model_->SetOptimizerState(ToGpu(m), ToGpu(v));
  }
  int64_t LocalStateSize() const override { return model_ ? model_->LocalStateSize() : 0; }
  Status GetLocalState(std::span<float> params, std::span<float> m,
                       std::span<float> v) const override {
    BM_TRY(CheckLocal("GetLocalState", params.size(), m.size(), v.size()));
    std::vector<float> gp, gm, gv;
    BM_TRY(model_->GetLocalState(&gp, &gm, &gv));
    std::copy(gp.begin(), gp.end(), params.begin());
    std::copy(gm.begin(), gm.end(), m.begin());
    std::copy(gv.begin(), gv.end(), v.begin());
    return Status::Ok();
  }
  Status SetLocalState(std::span<const float> params, std::span<const float> m,
                       std::span<const float> v) override {
    BM_TRY(CheckLocal("SetLocalState", params.size(), m.size(), v.size()));
    return model_->SetLocalState({params.begin(), params.end()}, {m.begin(), m.end()},
                                 {v.begin(), v.end()});
  }
  double CommWaitSeconds() const override { return model_ ? model_->CommWaitSeconds() : 0; }
  Status ZeroGrad() override {
    if (!model_) return NotInitialized("ZeroGrad");
    return model_->ZeroGradients();
  }
  Result<LossSum> ForwardBackward(const MicroBatch& b, float loss_scale) override {
    BM_TRY(CheckBatch("ForwardBackward", b.inputs, b.B, b.T));
    if (!b.targets) return Errorf(ErrorCode::kInvalidArgument, "ForwardBackward: no targets");
    LossSum loss;
    int64_t n = b.B * b.T;
    if (b.loss_mask) {
      for (int64_t i = 0; i < n; ++i) loss.count += b.loss_mask[i] ? 1 : 0;
    } else {
      loss.count = n;
    }
    BM_ASSIGN_OR_RETURN(loss.sum, model_->ForwardBackward(Batch(b), loss_scale, b.last));
    return loss;
  }
  Result<float> GradNorm() override {
    if (!model_) return NotInitialized("GradNorm");
    BM_ASSIGN_OR_RETURN(double norm, model_->GradNorm());
    return static_cast<float>(norm);
  }
  Status OptimizerStep(const AdamWStep& s) override {
    if (!model_) return NotInitialized("OptimizerStep");
    AdamWHyper h;
    h.lr = s.lr, h.beta1 = s.beta1, h.beta2 = s.beta2, h.eps = s.eps;
    h.weight_decay = s.weight_decay, h.max_norm = s.grad_clip, h.step = static_cast<int>(s.step);
    h.grad_scale = s.grad_scale;
    return model_->OptimizerStep(h);
  }
  Status TokenLosses(const MicroBatch& b, float* losses) override {
    BM_TRY(CheckBatch("TokenLosses", b.inputs, b.B, b.T));
    if (!b.targets) return Errorf(ErrorCode::kInvalidArgument, "TokenLosses: no targets");
    return model_->TokenLosses(Batch(b), losses);
  }
  Status NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) override {
    BM_TRY(CheckBatch("NextTokenArgmax", inputs, B, T));
    return model_->NextTokenArgmax(inputs, static_cast<int>(B), static_cast<int>(T), argmax);
  }
  MemoryStats Memory() const override {
    MemoryStats m;
    if (model_) m.peak_bytes = static_cast<int64_t>(model_->memory().plan_bytes);
    m.device_total_bytes = total_bytes_;
    return m;
  }

 private:
  static TokenBatch Batch(const MicroBatch& b) {
    TokenBatch t;
    t.tokens = b.inputs, t.targets = b.targets, t.mask = b.loss_mask;
    t.batch = static_cast<int>(b.B), t.seq = static_cast<int>(b.T);
    return t;
  }
  static Status NotInitialized(std::string_view call) {
    return Errorf(ErrorCode::kInternal, "cuda backend: {} before Init", call);
  }
  Status Check(std::string_view call, size_t n) const {
    if (!model_) return NotInitialized(call);
    if (n != static_cast<size_t>(host_layout_->total())) {
      return Errorf(ErrorCode::kInvalidArgument, "cuda backend: {} with {} floats, layout has {}",
                    call, n, host_layout_->total());
    }
    return Status::Ok();
  }
  // The local state is in the GPU's layout and order (its ZeRO slices), opaque to the host.
  Status CheckLocal(std::string_view call, size_t p, size_t m, size_t v) const {
    if (!model_) return NotInitialized(call);
    const size_t n = static_cast<size_t>(model_->LocalStateSize());
    if (p != n || m != n || v != n)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cuda backend: {}: buffers of {}, {} and {} floats, the local state has {}",
                    call, p, m, v, n);
    return Status::Ok();
  }
  Status CheckBatch(std::string_view call, const int32_t* inputs, int64_t B, int64_t T) const {
    if (!model_) return NotInitialized(call);
    if (!inputs || B < 1 || T < 1) {
      return Errorf(ErrorCode::kInvalidArgument, "cuda backend: {} with B={} T={}", call, B, T);
    }
    return Status::Ok();  // bounds and token ids: CudaModel checks them
  }
  std::vector<float> ToGpu(std::span<const float> host) const {
    std::vector<float> flat(model_->layout().total(), 0.0f);
    for (const Span& s : spans_) {
      std::copy(host.begin() + s.host, host.begin() + s.host + s.numel, flat.begin() + s.gpu);
    }
    return flat;
  }
  void FromGpu(const std::vector<float>& flat, std::span<float> host) const {
    for (const Span& s : spans_) {
      std::copy(flat.begin() + s.gpu, flat.begin() + s.gpu + s.numel, host.begin() + s.host);
    }
  }

  std::unique_ptr<CudaModel> model_;
  std::unique_ptr<train::ParamLayout> host_layout_;
  std::vector<Span> spans_;
  std::string name_ = "CUDA GPU";
  int64_t total_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<Backend>> CreateCudaBackend() {
  return std::unique_ptr<Backend>(new CudaBackend());
}

nlohmann::json ProbeCudaPlatform() {
  nlohmann::json j = {{"gpus", nlohmann::json::array()}, {"driver", nullptr}, {"cuda", nullptr}};
  Result<GpuFacts> facts = ProbeGpus();
  if (!facts.ok()) return j;
  for (const GpuFacts::Gpu& g : facts->gpus) {
    j["gpus"].push_back({{"name", g.name},
                         {"memory_bytes", g.memory_bytes},
                         {"compute_capability", fmt::format("{}.{}", g.sm_major, g.sm_minor)}});
  }
  std::string driver = DriverVersion();
  if (!driver.empty()) j["driver"] = driver;
  if (facts->driver_version > 0) {
    j["cuda"] =
        fmt::format("{}.{}", facts->driver_version / 1000, (facts->driver_version % 1000) / 10);
  }
  return j;
}

}  // namespace bm::train::cuda
