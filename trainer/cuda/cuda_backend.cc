#include "trainer/cuda/cuda_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <vector>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/nvml_gpu.h"
#include "trainer/cuda/probe.h"
#include "trainer/cuda/shard_map.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/pipeline_schedule.h"
#include "trainer/model/layout.h"
#include "trainer/model/shard.h"

namespace bm::train::cuda {
namespace {

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
    // Tensor and pipeline parallelism: this rank's shard (trainer/model/shard.h) with
    // Megatron's collectives and the 1F1B stage (cuda_model.h); ZeRO 0-3 over each TP rank's
    // and stage's data-parallel group.
    const int tp = o.tp ? o.tp->size() : 1, pp = o.pp ? o.pp->size() : 1;
    BM_ASSIGN_OR_RETURN(ModelShard shard, ModelShard::Make(c, {tp, o.tp ? o.tp->rank() : 0, pp,
                                                               o.pp ? o.pp->rank() : 0}));
    for (dist::Communicator* group : {o.tp, o.pp})
      if (group && group->size() > 1 && !group->device())
        return Errorf(ErrorCode::kInvalidArgument,
                      "cuda backend: TP{} PP{} need device communicators (NCCL or staged Gloo), "
                      "not {}",
                      tp, pp, group->transport());
    if (tp > 1) tp_ = o.tp;
    if (pp > 1) pp_ = o.pp;
    BM_CUDA_CHECK(cudaSetDevice(o.device_index), "selecting GPU {}", o.device_index);
    cudaDeviceProp props{};
    BM_CUDA_CHECK(cudaGetDeviceProperties(&props, o.device_index), "GPU {}", o.device_index);
    name_ = props.name;
    total_bytes_ = static_cast<int64_t>(props.totalGlobalMem);
    device_index_ = o.device_index;
    device_uuid_.clear();
    for (char byte : props.uuid.bytes)
      device_uuid_ += fmt::format("{:02x}", static_cast<unsigned char>(byte));
    const ModelSpec spec = SpecOfShard(c, shard);
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
    run.tp = tp_;
    run.sequence_parallel = tp_ && o.sequence_parallel;
    run.grad_reduce_bf16 = o.grad_reduce_bf16;
    run.nccl_window = o.nccl_window;
    run.zero3_keep_params = o.zero3_keep_params;
    run.pp = pp_;
    if (pp_) run.pipeline_slots = dist::MaxInFlight(pp, spec.pp_rank, std::max(1, o.micro_batches));
    run.micro_batch = static_cast<int>(o.max_batch);
    run.micro_batches_per_step = o.micro_batches;
    run.seq = static_cast<int>(o.max_seq);
    run.dtype = o.precision == Precision::kBf16   ? DType::kBF16
                : o.precision == Precision::kFp16 ? DType::kF16
                                                  : DType::kF32;
    run.recompute = o.recompute;
    // "auto": cuDNN's fused attention (deterministic, measured faster: docs/PERFORMANCE.md)
    // when it is built in and takes this shape in bf16 or fp16; otherwise our flash kernels.
    AttentionShape shape{run.micro_batch,         run.seq,         spec.local_heads(),
                         spec.local_kv_heads(),   spec.head_dim(), run.attention_chunk,
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
    if (o.attention_backward == "one_call" || o.attention_backward == "blocks") {
      if (run.attention != AttentionImpl::kCudnn)
        return Errorf(ErrorCode::kInvalidArgument,
                      "attention_backward \"{}\" chooses how cuDNN's attention runs, but this run "
                      "takes our flash kernels (attention \"{}\"{})",
                      o.attention_backward, o.attention,
                      CudnnAttentionBuilt() ? ": cuDNN does not take this shape in this precision"
                                            : ": this build has no cuDNN");
      run.attention_chunk = o.attention_backward == "one_call" ? 0 : kCudnnKeyChunk;
    } else if (o.attention_backward != "auto") {
      return Errorf(ErrorCode::kInvalidArgument,
                    "attention_backward must be \"auto\", \"one_call\" or \"blocks\", not \"{}\"",
                    o.attention_backward);
    }
    BM_ASSIGN_OR_RETURN(model_, CudaModel::Create(spec, run));
    shard_ = std::make_unique<ModelShard>(std::move(shard));
    BM_ASSIGN_OR_RETURN(spans_, MapOntoTrainer(model_->layout(), shard_->layout()));
    if (tp_ || pp_) BM_TRY(model_->CountGradients(OwnedRanges()));
    return Status::Ok();
  }

  Status SetParameters(std::span<const float> params) override {
    BM_TRY(Check("SetParameters", params.size()));
    return SetParametersFrom(SourceOf(params));
  }
  // Only this rank's part is asked for: its TP x PP shard, and of that what CudaDataParallel
  // keeps (its ZeRO slices), a chunk at a time.
  Status SetParametersFrom(const ParamSource& source) override {
    if (!model_) return NotInitialized("SetParametersFrom");
    if (shard_->whole()) return model_->SetParameters(OnGpu(source));
    std::vector<float> local(shard_->layout().total());
    shard_->Extract(source, local);
    return model_->SetParameters(OnGpu(SourceOf(local)));
  }
  Status GetParameters(std::span<float> params) const override {
    if (!model_) return NotInitialized("GetParameters");
    if (!params.empty()) BM_TRY(Check("GetParameters", params.size()));
    if (shard_->whole())
      return model_->GetParameters(params.empty() ? RangeSink() : OnHost(params));
    std::vector<float> local(shard_->layout().total());
    BM_TRY(model_->GetParameters(OnHost(local)));
    CudaModel* model = model_.get();
    auto link = [model](dist::Communicator* group) {
      ShardLink l;
      if (!group) return l;
      l.send = [model, group](const float* data, int64_t count, int peer) {
        return model->SendHost(group, data, count, peer);
      };
      l.recv = [model, group](float* data, int64_t count, int peer) {
        return model->RecvHost(group, data, count, peer);
      };
      return l;
    };
    return GatherShardsToFirst(*shard_, local, params, link(tp_), link(pp_));
  }
  // Data parallel: the GPU's ranges as the gather brings them, unit by unit (its units are the
  // trainer's, in order). Under TP/PP the group's first rank assembles the whole model from
  // the shards anyway: handed over whole.
  Status GetParametersTo(const ParamSink& sink) const override {
    if (!model_) return NotInitialized("GetParametersTo");
    if (!shard_->whole()) return GetWholeTo(shard_->full_size(), sink);
    if (!sink) return model_->GetParameters(RangeSink());
    return model_->GetParameters([this, &sink](size_t begin, std::span<const float> values) {
      ForEachRun(begin, values.size(), [&](size_t gpu, size_t host, size_t n) {
        sink(static_cast<int64_t>(host), values.subspan(gpu - begin, n));
      });
    });
  }
  Status GetGradients(std::span<float> grads) const override {
    BM_TRY(Check("GetGradients", grads.size()));
    std::vector<float> flat;
    BM_TRY(model_->GetGradients(&flat));
    return FromGpu(flat, grads);
  }
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const override {
    BM_TRY(Check("GetOptimizerState", m.size()));
    BM_TRY(Check("GetOptimizerState", v.size()));
    std::vector<float> gm, gv;
    BM_TRY(model_->GetOptimizerState(&gm, &gv));
    BM_TRY(FromGpu(gm, m));
    return FromGpu(gv, v);
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
    if (pp_)
      return Status(ErrorCode::kUnsupported,
                    "cuda backend: ForwardBackward of one micro-batch with pipeline stages: use "
                    "ForwardBackwardStep");
    LossSum loss;
    loss.count = Counted(b);
    BM_ASSIGN_OR_RETURN(loss.sum, model_->ForwardBackward(Batch(b), loss_scale, b.last));
    return loss;
  }
  Result<LossSum> ForwardBackwardStep(std::span<const MicroBatch> micro,
                                      float loss_scale) override {
    if (!pp_) return Backend::ForwardBackwardStep(micro, loss_scale);
    std::vector<TokenBatch> batches;
    LossSum loss;
    for (const MicroBatch& b : micro) {
      BM_TRY(CheckBatch("ForwardBackwardStep", b.inputs, b.B, b.T));
      if (!b.targets) return Errorf(ErrorCode::kInvalidArgument, "ForwardBackwardStep: no targets");
      batches.push_back(Batch(b));
      loss.count += Counted(b);
    }
    BM_ASSIGN_OR_RETURN(loss.sum, model_->PipelineStep(batches, loss_scale));
    if (pp_->rank() != pp_->size() - 1) loss.count = 0;  // the loss is the last stage's
    return loss;
  }
  double PipelineWaitSeconds() const override { return model_ ? model_->PipelineWaitSeconds() : 0; }
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
    BM_TRY(CheckOneRank("TokenLosses"));
    if (!b.targets) return Errorf(ErrorCode::kInvalidArgument, "TokenLosses: no targets");
    return model_->TokenLosses(Batch(b), losses);
  }
  Status NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) override {
    BM_TRY(CheckBatch("NextTokenArgmax", inputs, B, T));
    BM_TRY(CheckOneRank("NextTokenArgmax"));
    TokenBatch batch;
    batch.tokens = inputs, batch.batch = static_cast<int>(B), batch.seq = static_cast<int>(T);
    return model_->NextTokenArgmax(batch, argmax);
  }
  MemoryStats Memory() const override {
    MemoryStats m;
    if (model_) {
      m.peak_bytes = static_cast<int64_t>(model_->memory().plan_bytes);
      m.plan = model_->memory().plan_summary;
    }
    m.device_total_bytes = total_bytes_;
    return m;
  }
  // NVML opened on the first reading: a run that never asks does not load it.
  std::optional<EnergyReading> ReadEnergy() override {
    if (!model_) return std::nullopt;
    if (!nvml_opened_) nvml_opened_ = true, nvml_.Open(device_index_);
    if (!nvml_.ok() || cudaDeviceSynchronize() != cudaSuccess) return std::nullopt;
    const double joules = nvml_.Joules();
    if (joules < 0) return std::nullopt;
    return EnergyReading{device_uuid_, joules};
  }

 private:
  static TokenBatch Batch(const MicroBatch& b) {
    TokenBatch t;
    t.tokens = b.inputs, t.targets = b.targets, t.mask = b.loss_mask;
    t.batch = static_cast<int>(b.B), t.seq = static_cast<int>(b.T);
    return t;
  }
  // The positions whose loss counts.
  static int64_t Counted(const MicroBatch& b) {
    const int64_t n = b.B * b.T;
    if (!b.loss_mask) return n;
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += b.loss_mask[i] ? 1 : 0;
    return count;
  }
  static Status NotInitialized(std::string_view call) {
    return Errorf(ErrorCode::kInternal, "cuda backend: {} before Init", call);
  }
  Status Check(std::string_view call, size_t n) const {
    if (!model_) return NotInitialized(call);
    if (n != static_cast<size_t>(shard_->full_size())) {
      return Errorf(ErrorCode::kInvalidArgument, "cuda backend: {} with {} floats, layout has {}",
                    call, n, shard_->full_size());
    }
    return Status::Ok();
  }
  Status CheckOneRank(std::string_view call) const {
    if (shard_->whole()) return Status::Ok();
    return Errorf(ErrorCode::kUnsupported,
                  "cuda backend: {} runs on one rank (TP1 PP1): evaluate the gathered checkpoint",
                  call);
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
  // Calls fn(gpu, host, n) for each run of n elements of [begin, begin + count) of the GPU's
  // layout that holds trainer elements (not padding), at those offsets of the GPU's and this
  // rank's trainer layout.
  template <typename Fn>
  void ForEachRun(size_t begin, size_t count, Fn fn) const {
    const size_t end = begin + count;
    auto it = std::upper_bound(spans_.begin(), spans_.end(), begin,
                               [](size_t b, const TensorSpan& s) { return b < s.gpu + s.numel; });
    for (; it != spans_.end() && it->gpu < end; ++it) {
      const size_t lo = std::max(begin, it->gpu), hi = std::min(end, it->gpu + it->numel);
      if (lo < hi) fn(lo, it->host + (lo - it->gpu), hi - lo);
    }
  }
  // The GPU's layout by ranges (padding zero) from this rank's trainer layout.
  RangeSource OnGpu(ParamSource local) const {
    return [this, local = std::move(local)](size_t begin, std::span<float> out) {
      std::fill(out.begin(), out.end(), 0.0f);
      ForEachRun(begin, out.size(), [&](size_t gpu, size_t host, size_t n) {
        local(static_cast<int64_t>(host), out.subspan(gpu - begin, n));
      });
    };
  }
  // The GPU's layout by ranges into this rank's trainer layout.
  RangeSink OnHost(std::span<float> local) const {
    return [this, local](size_t begin, std::span<const float> values) {
      ForEachRun(begin, values.size(), [&](size_t gpu, size_t host, size_t n) {
        std::copy_n(values.begin() + (gpu - begin), n, local.begin() + host);
      });
    };
  }
  // The whole model's flat buffer (ParamLayout(model) order) -> this rank's share in the GPU's
  // layout.
  std::vector<float> ToGpu(std::span<const float> whole) const {
    std::vector<float> local;
    std::span<const float> host = whole;
    if (!shard_->whole()) {
      local.resize(shard_->layout().total());
      shard_->Extract(whole, local);
      host = local;
    }
    std::vector<float> flat(model_->layout().total());
    OnGpu(SourceOf(host))(0, flat);
    return flat;
  }
  // The GPU's layout -> the whole model's buffer: under tensor parallelism the TP group's
  // shards gathered (collective).
  Status FromGpu(const std::vector<float>& flat, std::span<float> whole) const {
    if (shard_->whole()) {
      OnHost(whole)(0, flat);
      return Status::Ok();
    }
    std::vector<float> local(shard_->layout().total());
    OnHost(local)(0, flat);
    CudaModel* model = model_.get();
    auto over = [model](dist::Communicator* group) -> ShardAllGather {
      if (!group) return nullptr;
      return [model, group](const float* send, float* recv, int64_t count) {
        return model->AllGatherHost(group, send, recv, count);
      };
    };
    return GatherShards(*shard_, local, whole, over(tp_), over(pp_));
  }
  // The GPU tensors (with their padding) this rank owns (ModelShard::owns), adjacent ones
  // merged: its part of the gradient norm.
  std::vector<Range> OwnedRanges() const {
    std::vector<Range> ranges;
    const std::vector<cuda::ParamTensor>& tensors = model_->layout().tensors();
    for (size_t i = 0; i < spans_.size(); ++i) {
      if (!shard_->owns(spans_[i].host_tensor)) continue;
      const size_t begin = tensors[i].offset;
      const size_t end = i + 1 < tensors.size() ? tensors[i + 1].offset : model_->layout().total();
      if (!ranges.empty() && ranges.back().end() == begin)
        ranges.back().numel += end - begin;
      else
        ranges.push_back({begin, end - begin, false});
    }
    return ranges;
  }

  std::unique_ptr<CudaModel> model_;
  std::unique_ptr<ModelShard> shard_;
  // The TP and PP groups when they have more than one rank, else null.
  dist::Communicator* tp_ = nullptr;
  dist::Communicator* pp_ = nullptr;
  std::vector<TensorSpan> spans_;
  std::string name_ = "CUDA GPU";
  int64_t total_bytes_ = 0;
  int device_index_ = 0;
  std::string device_uuid_;  // the GPU's, in hex: ranks sharing it count its energy once
  NvmlGpu nvml_;
  bool nvml_opened_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> CreateCudaBackend() {
  return std::unique_ptr<Backend>(new CudaBackend());
}

nlohmann::json ProbeCudaPlatform(bool libraries) {
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
  // The libraries loaded, which LD_LIBRARY_PATH may change under the same build: their kernels
  // set the measurements (and the bits).
  j["cublaslt"] = j["cudnn"] = nullptr;
  if (libraries) {
    const size_t lt = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
    j["cublaslt"] = fmt::format("{}.{}.{}", lt / 10000, lt / 100 % 100, lt % 100);
    const std::string cudnn = CudnnLibraryVersion();
    if (!cudnn.empty()) j["cudnn"] = cudnn;
  }
  if (facts->driver_version > 0) {
    j["cuda"] =
        fmt::format("{}.{}", facts->driver_version / 1000, (facts->driver_version % 1000) / 10);
  }
  return j;
}

}  // namespace bm::train::cuda
