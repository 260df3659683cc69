#include "trainer/cuda/cuda_llava_trainer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/cpu/ops/adamw.h"
#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/cuda_vision_tower.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/shard_map.h"
#include "trainer/data/llava_batch.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/shard.h"

namespace bm::train::cuda {
namespace {

// One device allocation, freed with its owner.
struct DeviceMemory {
  void* ptr = nullptr;
  size_t bytes = 0;
  const char* what = "";
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    if (ptr) cudaFree(ptr);
  }
  Status Alloc(size_t bytes, const char* what) {
    BM_CUDA_CHECK(cudaMalloc(&ptr, std::max<size_t>(bytes, 16)), "LLaVA {}: {} bytes", what, bytes);
    BM_CUDA_CHECK(cudaMemset(ptr, 0, std::max<size_t>(bytes, 16)), "LLaVA {}", what);
    this->bytes = std::max<size_t>(bytes, 16);
    this->what = what;
    return Status::Ok();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

}  // namespace

struct CudaLlavaTrainer::Impl {
  // A replicated part (the tower, the projector): its device masters and gradients, its AdamW
  // moments here.
  struct Part {
    const char* name = "";
    bool trained = true;
    float* master = nullptr;
    float* grad = nullptr;
    const train::ParamLayout* layout = nullptr;
    DeviceMemory m, v;
    size_t n() const { return static_cast<size_t>(layout->total()); }
  };

  LlavaConfig config;
  LlavaLayout layout;
  int64_t max_images = 0, max_batch = 0, max_seq = 0;
  DType dtype = DType::kF32;
  std::unique_ptr<dist::Communicator> self;
  dist::Communicator* comm = nullptr;
  cudaStream_t stream = nullptr;  // the LM's (CudaModel::stream()): every call runs on it
  std::unique_ptr<CudaVisionTower> tower;
  std::unique_ptr<CudaProjector> projector;
  std::unique_ptr<CudaModel> lm;
  std::vector<TensorSpan> spans;  // the LM's GPU tensors in the trainer's text layout
  Part parts[2];
  DeviceMemory pixels;             // [max_images, 3, S, S] fp32
  DeviceMemory rows, row_grad;     // compacted kept rows and their gradient [K*max, H]
  DeviceMemory dprojected;         // the projector's output gradient [K*max, H]
  DeviceMemory norm;               // 1 + kGradNormBlocks floats
  std::vector<int32_t> positions;  // the kept image tokens' positions
  std::vector<int64_t> kept;       // their index image * K + k
  bool train_lm = true;
  bool compacted = false;  // some token was cut off: rows / row_grad in use
  std::string device_name;
  int64_t device_total_bytes = 0;

  explicit Impl(const LlavaConfig& c) : config(c), layout(c) {}
  ~Impl() {  // the modules before the LM, whose stream they use
    projector.reset();
    tower.reset();
    lm.reset();
  }
  size_t elem() const { return dtype == DType::kF32 ? 4 : 2; }
  int64_t hidden() const { return config.text.hidden; }

  // The LM's GPU ranges over the trainer's text buffer (CudaBackend's mapping).
  template <typename Fn>
  void ForEachRun(size_t begin, size_t count, Fn fn) const {
    const size_t end = begin + count;
    auto it = std::upper_bound(spans.begin(), spans.end(), begin,
                               [](size_t b, const TensorSpan& s) { return b < s.gpu + s.numel; });
    for (; it != spans.end() && it->gpu < end; ++it) {
      const size_t lo = std::max(begin, it->gpu), hi = std::min(end, it->gpu + it->numel);
      if (lo < hi) fn(lo, it->host + (lo - it->gpu), hi - lo);
    }
  }

  // Copies the kept tokens' rows between the projector's [images*K, H] layout and the compacted
  // [kept, H] one, a run of consecutive indices at a time. to_compact: output -> rows.
  Status CopyRuns(const void* from, void* to, bool to_compact) {
    const size_t row = static_cast<size_t>(hidden()) * elem();
    for (size_t i = 0; i < kept.size();) {
      size_t j = i + 1;
      while (j < kept.size() && kept[j] == kept[j - 1] + 1) ++j;
      const size_t src = to_compact ? static_cast<size_t>(kept[i]) : i;
      const size_t dst = to_compact ? i : static_cast<size_t>(kept[i]);
      BM_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(to) + dst * row,
                                    static_cast<const char*>(from) + src * row, (j - i) * row,
                                    cudaMemcpyDeviceToDevice, stream),
                    "LLaVA image rows {}..{}", kept[i], kept[j - 1]);
      i = j;
    }
    return Status::Ok();
  }

  // The batch's images through the tower and the projector; `spliced` gets the kept image
  // tokens' rows (in place, or compacted when some token was cut off) and their gradient buffer.
  // kInvalidArgument (nothing computed) for too many images or a position outside the batch.
  Status Encode(const cpu::LlavaMicroBatch& b, const char* call, SplicedRows* spliced) {
    if (b.images < 0 || b.images > max_images ||
        (b.images > 0 && (!b.pixel_values || !b.image_positions)))
      return Errorf(ErrorCode::kInvalidArgument,
                    "CudaLlavaTrainer::{}: {} images (at most {}), each with pixel values and "
                    "positions",
                    call, b.images, max_images);
    const int64_t K = config.image_tokens(), N = b.B * b.T;
    kept.clear();
    positions.clear();
    for (int64_t i = 0; i < b.images * K; ++i) {
      const int64_t p = b.image_positions[i];
      if (p < 0) continue;
      if (p >= N)
        return Errorf(ErrorCode::kInvalidArgument,
                      "CudaLlavaTrainer::{}: image {} token {} at position {}, outside the "
                      "batch's {} x {}",
                      call, i / K, i % K, p, b.B, b.T);
      kept.push_back(i);
      positions.push_back(static_cast<int32_t>(p));
    }
    const int images = static_cast<int>(b.images);
    if (images == 0) return Status::Ok();
    const int64_t S = config.vision.image_size;
    BM_CUDA_CHECK(
        cudaMemcpyAsync(pixels.ptr, b.pixel_values, static_cast<size_t>(images * 3 * S * S) * 4,
                        cudaMemcpyHostToDevice, stream),
        "LLaVA pixels of {} images", images);
    BM_TRY(tower->Forward(pixels.as<float>(), images));
    BM_TRY(projector->Forward(tower->features(), static_cast<int>(images * K)));
    compacted = static_cast<int64_t>(kept.size()) != images * K;
    spliced->positions = positions.data();
    spliced->count = static_cast<int>(kept.size());
    if (compacted) {
      BM_TRY(CopyRuns(projector->output(), rows.ptr, true));
      spliced->rows = rows.ptr;
      spliced->grad = row_grad.ptr;
    } else {
      spliced->rows = projector->output();
      spliced->grad = dprojected.ptr;
    }
    return Status::Ok();
  }

  // Device bytes of the trainer's own buffers (moments, pixels, rows, the norm's).
  size_t OwnBytes() const {
    size_t n = pixels.bytes + rows.bytes + row_grad.bytes + dprojected.bytes + norm.bytes;
    for (const Part& p : parts) n += p.m.bytes + p.v.bytes;
    return n;
  }

  // Every module's part of Memory().peak_bytes: the LM's arena, the tower's and the projector's
  // parameters and arenas, the trainer's own buffers.
  std::string PlanSummary() const {
    const auto mib = [](size_t b) { return b / 1048576.0; };
    std::string out = "language model: " + lm->memory().plan_summary;
    out += "vision tower: " + tower->memory_summary();
    out += "projector: " + projector->memory_summary();
    out += fmt::format("the trainer's buffers: {:.1f} MiB\n", mib(OwnBytes()));
    for (const DeviceMemory* d : {&pixels, &rows, &row_grad, &dprojected})
      out += fmt::format("  {:>10.1f} MiB  {}\n", mib(d->bytes), d->what);
    for (const Part& p : parts)
      if (p.m.bytes > 0)
        out +=
            fmt::format("  {:>10.1f} MiB  {} AdamW m and v\n", mib(p.m.bytes + p.v.bytes), p.name);
    return out;
  }

  Result<double> PartSumSquares(const Part& p) {
    BM_TRY(GradSumSquares(norm.as<float>(), norm.as<float>() + 1, p.grad, p.n(), stream));
    float out = 0;
    BM_CUDA_CHECK(cudaMemcpyAsync(&out, norm.as<float>(), 4, cudaMemcpyDeviceToHost, stream),
                  "LLaVA {} gradient norm", p.name);
    BM_CUDA_CHECK(cudaStreamSynchronize(stream), "LLaVA {} gradient norm", p.name);
    return static_cast<double>(out);
  }
};

CudaLlavaTrainer::CudaLlavaTrainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaLlavaTrainer::~CudaLlavaTrainer() = default;

int64_t CudaLlavaTrainer::total() const { return impl_->layout.total(); }
const LlavaLayout& CudaLlavaTrainer::layout() const { return impl_->layout; }
const MemoryReport& CudaLlavaTrainer::lm_memory() const { return impl_->lm->memory(); }
const std::string& CudaLlavaTrainer::device_name() const { return impl_->device_name; }

MemoryStats CudaLlavaTrainer::Memory() const {
  const Impl& s = *impl_;
  MemoryStats m;
  m.peak_bytes = static_cast<int64_t>(s.lm->memory().plan_bytes + s.tower->device_bytes() +
                                      s.projector->device_bytes() + s.OwnBytes());
  m.device_total_bytes = s.device_total_bytes;
  m.plan = s.PlanSummary();
  return m;
}

Result<std::unique_ptr<CudaLlavaTrainer>> CudaLlavaTrainer::Create(
    const LlavaConfig& config, const BackendOptions& options, int64_t max_images,
    const cpu::LlavaTrainable& trainable) {
  BM_TRY(Validate(config));
  if (options.precision == Precision::kFp16)
    return Status(ErrorCode::kUnsupported,
                  "LLaVA on cuda: fp32 or bf16 (fp16 would need loss scaling)");
  for (dist::Communicator* c : {options.tp, options.pp})
    if (c && c->size() > 1)
      return Status(ErrorCode::kUnsupported,
                    "LLaVA on cuda: data parallelism only (layout DPn), no TP or PP");
  if (options.zero < 0 || options.zero > 3)
    return Errorf(ErrorCode::kInvalidArgument, "zero = {}: the ZeRO stage is 0, 1, 2 or 3",
                  options.zero);
  if (options.max_batch < 1 || options.max_seq < 1 || options.max_seq > config.text.max_seq)
    return Errorf(ErrorCode::kInvalidArgument,
                  "LLaVA on cuda: batch {} and sequence {} must be >= 1, sequence <= max_seq {}",
                  options.max_batch, options.max_seq, config.text.max_seq);
  if (max_images < 1)
    return Errorf(ErrorCode::kInvalidArgument, "LLaVA on cuda: max_images {} must be >= 1",
                  max_images);
  if (options.dp && options.dp->size() > 1 && !options.dp->device())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LLaVA on cuda: {} ranks need a device communicator (NCCL or staged Gloo), "
                  "not {}",
                  options.dp->size(), options.dp->transport());
  const ModelConfig& text = config.text;
  if (text.family != train::Family::kLlama || text.biases || text.tied_embeddings)
    return Status(ErrorCode::kUnsupported,
                  "LLaVA on cuda: the language model must be a llama (no biases, untied head), "
                  "as the cuda backend trains it");
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    cudaGetLastError();
    return Status(ErrorCode::kUnavailable, "LLaVA on cuda: no GPU");
  }
  BM_CUDA_CHECK(cudaSetDevice(options.device_index), "selecting GPU {}", options.device_index);

  auto impl = std::make_unique<Impl>(config);
  Impl& s = *impl;
  s.train_lm = trainable.language_model;
  cudaDeviceProp props{};
  BM_CUDA_CHECK(cudaGetDeviceProperties(&props, options.device_index), "GPU {}'s properties",
                options.device_index);
  s.device_name = props.name;
  s.device_total_bytes = static_cast<int64_t>(props.totalGlobalMem);
  s.max_images = max_images;
  s.max_batch = options.max_batch;
  s.max_seq = options.max_seq;
  s.dtype = options.precision == Precision::kBf16 ? DType::kBF16 : DType::kF32;
  s.comm = options.dp;
  if (!s.comm) {
    s.self = dist::MakeSelfCommunicator();
    s.comm = s.self.get();
  }
  // The language model: CudaModel under CudaDataParallel, as the cuda backend builds it.
  BM_ASSIGN_OR_RETURN(ModelShard shard, ModelShard::Make(text, {}));
  const ModelSpec spec = SpecOfShard(text, shard);
  RunSpec run;
  run.comm = options.dp;
  run.zero = options.zero;
  run.micro_batch = static_cast<int>(options.max_batch);
  run.seq = static_cast<int>(options.max_seq);
  run.dtype = s.dtype;
  run.recompute = options.recompute;
  // One micro-batch a step (GAS 1, LLaVA's stages): the LM plans its layers' streams over the
  // gradients and no reduce-scatter scratch, as the cuda backend's LLaMA does.
  run.micro_batches_per_step = options.micro_batches;
  // A frozen LM: its working weights only, replicated; its backward the rows' gradient only.
  run.frozen = !trainable.language_model;
  AttentionShape shape{
      run.micro_batch,     run.seq, spec.local_heads(), spec.local_kv_heads(), spec.head_dim(),
      run.attention_chunk, false};
  if (options.attention == "cudnn") {
    if (!CudnnAttentionBuilt())
      return Status(ErrorCode::kUnsupported,
                    "attention = \"cudnn\": this build has no cuDNN; use \"flash\"");
    run.attention = AttentionImpl::kCudnn;
  } else if (options.attention == "auto") {
    if (run.dtype != DType::kF32 && CudnnAttentionUsable(shape))
      run.attention = AttentionImpl::kCudnn;
  } else if (options.attention != "flash") {
    return Errorf(ErrorCode::kInvalidArgument,
                  "attention must be \"auto\", \"flash\" or \"cudnn\", not \"{}\"",
                  options.attention);
  }
  BM_ASSIGN_OR_RETURN(s.lm, CudaModel::Create(spec, run));
  if (shard.layout().total() != s.layout.text().total())
    return Errorf(ErrorCode::kInternal,
                  "LLaVA on cuda: the language model's layout ({} floats) is not LlavaLayout's "
                  "text ({})",
                  shard.layout().total(), s.layout.text().total());
  BM_ASSIGN_OR_RETURN(s.spans, MapOntoTrainer(s.lm->layout(), shard.layout()));

  // The vision tower and the projector, on the LM's stream (it reads their rows there).
  s.stream = s.lm->stream();
  CudaVisionOptions vo;
  vo.dtype = s.dtype;
  vo.max_images = static_cast<int>(max_images);
  vo.stream = s.stream;
  const int64_t K = config.image_tokens();
  const int64_t max_rows = max_images * K;
  BM_ASSIGN_OR_RETURN(s.tower, CudaVisionTower::Create(config.vision, vo, !trainable.tower));
  BM_ASSIGN_OR_RETURN(s.projector, CudaProjector::Create(config, static_cast<int>(max_rows), vo));
  if (static_cast<int64_t>(s.tower->layout().total()) != s.layout.vision().total() ||
      static_cast<int64_t>(s.projector->layout().total()) != s.layout.projector().total())
    return Errorf(ErrorCode::kInternal,
                  "LLaVA on cuda: the tower's / projector's layouts ({} / {} floats) are not "
                  "LlavaLayout's ({} / {})",
                  s.tower->layout().total(), s.projector->layout().total(),
                  s.layout.vision().total(), s.layout.projector().total());

  // A frozen tower has no backward (created forward only): no gradients, and in 16 bits no
  // masters; nor has a frozen projector under it.
  if (!trainable.tower && !trainable.projector) s.projector->Freeze();
  // The replicated parts' AdamW state, the batch's buffers.
  s.parts[0].trained = trainable.tower;
  s.parts[1].trained = trainable.projector;
  s.parts[0].name = "vision tower";
  s.parts[0].master = s.tower->master();
  s.parts[0].grad = s.tower->grad();
  s.parts[0].layout = &s.tower->layout();
  s.parts[1].name = "projector";
  s.parts[1].master = s.projector->master();
  s.parts[1].grad = s.projector->grad();
  s.parts[1].layout = &s.projector->layout();
  for (Impl::Part& p : s.parts) {
    if (!p.trained) continue;
    BM_TRY(p.m.Alloc(p.n() * 4, "AdamW m"));
    BM_TRY(p.v.Alloc(p.n() * 4, "AdamW v"));
  }
  const int64_t S = config.vision.image_size;
  BM_TRY(s.pixels.Alloc(static_cast<size_t>(max_images * 3 * S * S) * 4, "pixels"));
  const size_t row_bytes = static_cast<size_t>(max_rows * text.hidden) * s.elem();
  BM_TRY(s.rows.Alloc(row_bytes, "spliced rows"));
  BM_TRY(s.row_grad.Alloc(row_bytes, "spliced rows' gradient"));
  BM_TRY(s.dprojected.Alloc(row_bytes, "projector output gradient"));
  BM_TRY(s.norm.Alloc((1 + kGradNormBlocks) * 4, "gradient norm"));
  BM_CUDA_CHECK(cudaDeviceSynchronize(), "LLaVA on cuda: creating the model");
  return std::unique_ptr<CudaLlavaTrainer>(new CudaLlavaTrainer(std::move(impl)));
}

Status CudaLlavaTrainer::SetParameters(std::span<const float> whole) {
  Impl& s = *impl_;
  if (static_cast<int64_t>(whole.size()) != total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::SetParameters: {} floats, the model has {}", whole.size(),
                  total());
  BM_TRY(s.tower->SetParameters(whole.subspan(s.layout.vision_offset(), s.parts[0].n())));
  BM_TRY(s.projector->SetParameters(whole.subspan(s.layout.projector_offset(), s.parts[1].n())));
  const std::span<const float> text = whole.subspan(s.layout.text_offset());
  return s.lm->SetParameters(RangeSource([&s, text](size_t begin, std::span<float> out) {
    std::fill(out.begin(), out.end(), 0.0f);
    s.ForEachRun(begin, out.size(), [&](size_t gpu, size_t host, size_t n) {
      std::copy_n(text.begin() + host, n, out.begin() + (gpu - begin));
    });
  }));
}

Status CudaLlavaTrainer::GetParameters(std::span<float> whole) {
  Impl& s = *impl_;
  if (whole.empty()) return s.lm->GetParameters(RangeSink());
  if (static_cast<int64_t>(whole.size()) != total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::GetParameters: {} floats, the model has {}", whole.size(),
                  total());
  std::vector<float> part;
  BM_TRY(s.tower->GetParameters(&part));
  std::copy(part.begin(), part.end(), whole.begin() + s.layout.vision_offset());
  BM_TRY(s.projector->GetParameters(&part));
  std::copy(part.begin(), part.end(), whole.begin() + s.layout.projector_offset());
  const std::span<float> text = whole.subspan(s.layout.text_offset());
  return s.lm->GetParameters(RangeSink([&s, text](size_t begin, std::span<const float> values) {
    s.ForEachRun(begin, values.size(), [&](size_t gpu, size_t host, size_t n) {
      std::copy_n(values.begin() + (gpu - begin), n, text.begin() + host);
    });
  }));
}

Status CudaLlavaTrainer::GetGradients(std::span<float> whole) {
  Impl& s = *impl_;
  if (static_cast<int64_t>(whole.size()) != total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::GetGradients: {} floats, the model has {}", whole.size(),
                  total());
  std::vector<float> part;
  BM_TRY(s.tower->GetGradients(&part));
  std::copy(part.begin(), part.end(), whole.begin() + s.layout.vision_offset());
  BM_TRY(s.projector->GetGradients(&part));
  std::copy(part.begin(), part.end(), whole.begin() + s.layout.projector_offset());
  float* text = whole.data() + s.layout.text_offset();
  if (!s.train_lm) {  // a frozen LM has no gradients
    std::fill(text, whole.data() + whole.size(), 0.0f);
    return Status::Ok();
  }
  std::vector<float> flat;
  BM_TRY(s.lm->GetGradients(&flat));
  for (const TensorSpan& t : s.spans) std::copy_n(flat.begin() + t.gpu, t.numel, text + t.host);
  return Status::Ok();
}

Status CudaLlavaTrainer::ZeroGrad() {
  Impl& s = *impl_;
  BM_TRY(s.tower->ZeroGradients());
  BM_TRY(s.projector->ZeroGradients());
  return s.train_lm ? s.lm->ZeroGradients() : Status::Ok();
}

Result<LossSum> CudaLlavaTrainer::ForwardBackward(const cpu::LlavaMicroBatch& b, float loss_scale,
                                                  bool last) {
  Impl& s = *impl_;
  if (b.B < 1 || b.T < 1 || b.B > s.max_batch || b.T > s.max_seq || !b.inputs || !b.targets)
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::ForwardBackward: batch {} x {} (planned at most {} x {}), "
                  "inputs and targets needed",
                  b.B, b.T, s.max_batch, s.max_seq);
  SplicedRows spliced;
  BM_TRY(s.Encode(b, "ForwardBackward", &spliced));
  const int images = static_cast<int>(b.images);
  const int64_t K = s.config.image_tokens(), N = b.B * b.T;
  TokenBatch tb;
  tb.tokens = b.inputs, tb.targets = b.targets, tb.mask = b.loss_mask;
  tb.batch = static_cast<int>(b.B), tb.seq = static_cast<int>(b.T);
  tb.spliced = images > 0 ? &spliced : nullptr;
  LossSum loss;
  BM_ASSIGN_OR_RETURN(loss.sum, s.lm->ForwardBackward(tb, loss_scale, last));
  for (int64_t i = 0; i < N; ++i)
    loss.count += !b.loss_mask || b.loss_mask[i] ? 1 : 0;  // as the CPU model counts
  if (images > 0 && !s.kept.empty()) {
    if (s.compacted) {
      BM_CUDA_CHECK(
          cudaMemsetAsync(s.dprojected.ptr, 0,
                          static_cast<size_t>(images * K * s.hidden()) * s.elem(), s.stream),
          "LLaVA projector output gradient");
      BM_TRY(s.CopyRuns(s.row_grad.ptr, s.dprojected.ptr, false));
    }
    // a frozen tower is not backpropagated (nor the projector, when neither is trained)
    if (s.parts[0].trained || s.parts[1].trained) BM_TRY(s.projector->Backward(s.dprojected.ptr));
    if (s.parts[0].trained) BM_TRY(s.tower->Backward(s.projector->dfeatures()));
  }
  if (last && s.comm->size() > 1)
    for (Impl::Part& p : s.parts)
      if (p.trained)
        BM_TRY(s.comm->AllReduce(p.grad, static_cast<int64_t>(p.n()), dist::DType::kFloat32,
                                 dist::ReduceOp::kSum, s.stream));
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "LLaVA backward of {} images", images);
  return loss;
}

Result<float> CudaLlavaTrainer::GradNorm() {
  Impl& s = *impl_;
  double sum = 0;
  if (s.train_lm) {
    BM_ASSIGN_OR_RETURN(double lm, s.lm->GradNorm());
    sum = lm * lm;
  }
  // the replicated parts' gradients are the same on every rank: counted once
  for (const Impl::Part& p : s.parts) {
    if (!p.trained) continue;
    BM_ASSIGN_OR_RETURN(double part, s.PartSumSquares(p));
    sum += part;
  }
  return static_cast<float>(std::sqrt(sum));
}

Status CudaLlavaTrainer::OptimizerStep(const AdamWStep& step) {
  Impl& s = *impl_;
  BM_ASSIGN_OR_RETURN(float norm, GradNorm());
  // As the CPU twin: clipping by the global norm and 1 / the loss scale in one factor, handed to
  // both updates (the LM's own clipping off).
  AdamWHyper h;
  h.lr = step.lr, h.beta1 = step.beta1, h.beta2 = step.beta2, h.eps = step.eps;
  h.weight_decay = step.weight_decay;
  h.step = static_cast<int>(step.step);
  h.max_norm = 0.0f;
  h.grad_scale = cpu::ClipScale(norm * step.grad_scale, step.grad_clip) * step.grad_scale;
  if (s.train_lm) BM_TRY(s.lm->OptimizerStep(h));
  for (Impl::Part& p : s.parts) {
    if (!p.trained) continue;
    for (const train::ParamTensor& t : p.layout->tensors()) {
      AdamWHyper ht = h;
      ht.weight_decay = t.weight_decay && !t.frozen ? step.weight_decay : 0.0f;
      const size_t off = static_cast<size_t>(t.offset);
      BM_TRY(AdamWUpdate<__nv_bfloat16>(p.master + off, nullptr, p.m.as<float>() + off,
                                        p.v.as<float>() + off, p.grad + off, nullptr, ht,
                                        static_cast<size_t>(t.numel), s.stream));
    }
  }
  if (s.parts[0].trained) BM_TRY(s.tower->RefreshWorkingCopy());
  if (s.parts[1].trained) BM_TRY(s.projector->RefreshWorkingCopy());
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "LLaVA tower and projector update");
  return s.lm->Synchronize();
}

Result<std::vector<int32_t>> CudaLlavaTrainer::GenerateGreedy(
    std::span<const int32_t> prompt, const float* pixel_values, const int64_t* image_positions,
    int64_t images, int64_t max_new_tokens, int32_t eos_id, bool* context_full) {
  Impl& s = *impl_;
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n < 1 || n > s.max_seq)
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::GenerateGreedy: a prompt of {} tokens; the model reads 1 to "
                  "{} (max_seq)",
                  n, s.max_seq);
  if (max_new_tokens < 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "CudaLlavaTrainer::GenerateGreedy: max_new_tokens {} (>= 1)", max_new_tokens);
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  // The image rows depend on the pixels only: computed once, spliced into every pass (their
  // positions all lie in the prompt, so no token is cut off and nothing is compacted).
  SplicedRows spliced;
  const cpu::LlavaMicroBatch batch{ids.data(), nullptr,      nullptr,         1,
                                   n,          pixel_values, image_positions, images};
  BM_TRY(s.Encode(batch, "GenerateGreedy", &spliced));
  spliced.grad = nullptr;
  // Each pass reads the sequence padded to a multiple of kLlavaWidthMultiple positions: causal
  // attention keeps the padding from the last real position, and the matmuls meet a new shape
  // (cuBLASLt's tuning) once per 64 tokens, not once per token.
  std::vector<int32_t> padded, argmax, out;
  if (context_full) *context_full = false;
  while (static_cast<int64_t>(out.size()) < max_new_tokens) {
    const int64_t len = static_cast<int64_t>(ids.size());
    if (len > s.max_seq) {  // the last token read no further
      if (context_full) *context_full = true;
      break;
    }
    const int64_t width = std::min(
        (len + kLlavaWidthMultiple - 1) / kLlavaWidthMultiple * kLlavaWidthMultiple, s.max_seq);
    padded.assign(ids.begin(), ids.end());
    padded.resize(static_cast<size_t>(width), 0);
    argmax.resize(static_cast<size_t>(width));
    TokenBatch tb;
    tb.tokens = padded.data(), tb.batch = 1, tb.seq = static_cast<int>(width);
    tb.spliced = images > 0 ? &spliced : nullptr;
    BM_TRY(s.lm->NextTokenArgmax(tb, argmax.data()));
    const int32_t next = argmax[static_cast<size_t>(len - 1)];
    out.push_back(next);
    ids.push_back(next);
    if (next == eos_id) break;
  }
  return out;
}

}  // namespace bm::train::cuda
