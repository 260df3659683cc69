#include "trainer/cuda/cuda_model.h"

#include <chrono>

#include "trainer/cuda/cuda_model_impl.h"

namespace bm::train::cuda {

namespace {

// A model-parallel group of `size` ranks (TP or PP) as RunSpec gives it: a device communicator
// of that size where this model is rank `rank`, none for one rank.
Status CheckModelParallelGroup(const char* what, int size, int rank, dist::Communicator* group) {
  if (size == 1) {
    if (!group) return Status::Ok();
    return Errorf(ErrorCode::kInvalidArgument, "CUDA backend: a {} group for {}1", what, what);
  }
  if (!group || !group->device() || group->size() != size || group->rank() != rank)
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: rank {} of {}{} needs its {} group's device communicator", rank,
                  what, size, what);
  return Status::Ok();
}

}  // namespace

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
  if (model.tp < 1 || model.tp_rank < 0 || model.tp_rank >= model.tp ||
      model.heads % model.tp != 0 || model.kv_heads % model.tp != 0 || model.ffn % model.tp != 0) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: rank {} of TP{} must divide heads {}, kv_heads {} and ffn {}",
                  model.tp_rank, model.tp, model.heads, model.kv_heads, model.ffn);
  }
  BM_TRY(CheckModelParallelGroup("TP", model.tp, model.tp_rank, run.tp));
  if (run.sequence_parallel &&
      (model.tp == 1 || (static_cast<int64_t>(run.micro_batch) * run.seq) % model.tp != 0))
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: sequence parallelism needs TP > 1 dividing micro_batch x seq "
                  "({} x {}), TP{}",
                  run.micro_batch, run.seq, model.tp);
  const int layer_end = model.layer_end < 0 ? model.layers : model.layer_end;
  if (model.pp < 1 || model.pp_rank < 0 || model.pp_rank >= model.pp || model.layer_begin < 0 ||
      model.layer_begin > layer_end || layer_end > model.layers ||
      model.embeddings != (model.pp_rank == 0) || model.head != (model.pp_rank == model.pp - 1) ||
      run.pipeline_slots < 1) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: stage {} of PP{} with layers [{}, {}) of {}, {} slots",
                  model.pp_rank, model.pp, model.layer_begin, layer_end, model.layers,
                  run.pipeline_slots);
  }
  BM_TRY(CheckModelParallelGroup("PP", model.pp, model.pp_rank, run.pp));
  if (run.frozen && (model.tp > 1 || model.pp > 1 || run.dtype == DType::kF16))
    return Errorf(ErrorCode::kUnsupported,
                  "CUDA backend: a frozen model (RunSpec::frozen) takes bf16 or fp32 without TP "
                  "or PP (TP{} PP{}, {})",
                  model.tp, model.pp, DTypeName(run.dtype));
  if (model.pp == 1 && run.pipeline_slots != 1)
    return Status(ErrorCode::kInvalidArgument, "CUDA backend: activation slots without PP");
  int count = 0;
  BM_CUDA_CHECK(cudaGetDeviceCount(&count), "counting GPUs");
  if (count == 0) return Errorf(ErrorCode::kUnavailable, "no CUDA device");
  auto m = std::unique_ptr<CudaModel>(new CudaModel(std::make_unique<Impl>(model, run)));
  Impl& s = *m->impl_;
  BM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "stream");
  BM_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming), "event");
  BM_TRY(s.Plan());
  size_t n = s.MaxN();
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_ints), (6 * n + 1) * 4),
                "pinned staging {} ints", 6 * n + 1);
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_floats), (n + 16) * 4),
                "pinned staging {} floats", n + 16);
  BM_ASSIGN_OR_RETURN(s.matmul, Matmul::Create(s.arena->At<void>(s.workspace),
                                               Matmul::kDefaultWorkspaceBytes, run.matmul_tuning));
  BM_CUDA_CHECK(cudaMemsetAsync(s.arena->At<char>(0), 0, s.memory.plan_bytes, s.stream),
                "zeroing the arena ({} bytes)", s.memory.plan_bytes);
  std::vector<float> table = RopeTable(run.seq, model.head_dim(), model.rope_theta);
  BM_CUDA_CHECK(cudaMemcpyAsync(s.A<float>(s.rope), table.data(), table.size() * 4,
                                cudaMemcpyHostToDevice, s.stream),
                "rope table");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "setup");
  BM_ASSIGN_OR_RETURN(s.memory.device_used_bytes, DeviceArena::DeviceUsedBytes());
  s.memory.split_masters = s.dp.splits_masters();
  return m;
}

const ParamLayout& CudaModel::layout() const { return impl_->layout; }
const MemoryReport& CudaModel::memory() const { return impl_->memory; }
cudaStream_t CudaModel::stream() const { return impl_->stream; }

Status CudaModel::SetParameters(const std::vector<float>& flat) {
  if (flat.size() != layout().total())
    return Errorf(ErrorCode::kInvalidArgument, "{} parameters given, layout has {}", flat.size(),
                  layout().total());
  return SetParameters([&flat](size_t begin, std::span<float> out) {
    std::copy_n(flat.begin() + begin, out.size(), out.begin());
  });
}
Status CudaModel::GetParameters(std::vector<float>* flat) {
  flat->assign(layout().total(), 0.0f);
  return GetParameters([flat](size_t begin, std::span<const float> values) {
    std::copy(values.begin(), values.end(), flat->begin() + begin);
  });
}
Status CudaModel::SetParameters(const RangeSource& fill) { return impl_->dp.SetParameters(fill); }
Status CudaModel::GetParameters(const RangeSink& take) { return impl_->dp.GetParameters(take); }
Status CudaModel::GetGradients(std::vector<float>* flat) { return impl_->dp.GetGradients(flat); }
Status CudaModel::GetOptimizerState(std::vector<float>* m, std::vector<float>* v) {
  return impl_->dp.GetOptimizerState(m, v);
}
Status CudaModel::SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v) {
  return impl_->dp.SetOptimizerState(m, v);
}
int64_t CudaModel::LocalStateSize() const { return impl_->dp.local_size(); }
Status CudaModel::GetLocalState(std::vector<float>* master, std::vector<float>* m,
                                std::vector<float>* v) {
  return impl_->dp.GetLocalState(master, m, v);
}
Status CudaModel::SetLocalState(const std::vector<float>& master, const std::vector<float>& m,
                                const std::vector<float>& v) {
  return impl_->dp.SetLocalState(master, m, v);
}
Status CudaModel::CountGradients(std::vector<Range> ranges) {
  Impl& s = *impl_;
  if (!s.Tp() && !s.Pp())
    return Status(ErrorCode::kInvalidArgument, "CountGradients without a TP or PP group");
  if (ranges.size() > s.layout.tensors().size())
    return Errorf(ErrorCode::kInvalidArgument, "{} gradient ranges for {} tensors", ranges.size(),
                  s.layout.tensors().size());
  for (const Range& r : ranges)
    if (r.end() > s.layout.total())
      return Errorf(ErrorCode::kInvalidArgument, "gradient range [{}, {}) past the layout's {}",
                    r.offset, r.end(), s.layout.total());
  s.counted = std::move(ranges);
  s.norm_fresh = false;
  return Status::Ok();
}

Status CudaModel::AllGatherHost(dist::Communicator* group, const float* send, float* recv,
                                int64_t count) {
  Impl& s = *impl_;
  const int ranks = group->size();
  // The residual streams are idle between steps: [send chunk | ranks received chunks].
  const size_t bytes = static_cast<size_t>(s.StreamRows(s.MaxN())) * s.C() * s.elem;
  const int64_t chunk = static_cast<int64_t>(bytes / 4 / (ranks + 1));
  if (chunk < 1) return Status(ErrorCode::kInternal, "AllGatherHost: no staging space");
  float* dsend = s.A<float>(s.res[0]);
  float* drecv = dsend + chunk;
  for (int64_t at = 0; at < count; at += chunk) {
    const int64_t n = std::min(chunk, count - at);
    BM_CUDA_CHECK(cudaMemcpyAsync(dsend, send + at, n * 4, cudaMemcpyHostToDevice, s.stream),
                  "gather staging {} floats", n);
    BM_TRY(group->AllGather(dsend, drecv, n, dist::DType::kFloat32, s.stream));
    for (int r = 0; r < ranks; ++r)
      BM_CUDA_CHECK(cudaMemcpyAsync(recv + r * count + at, drecv + r * n, n * 4,
                                    cudaMemcpyDeviceToHost, s.stream),
                    "gathered {} floats of rank {}", n, r);
    BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "gathering {} floats", count);
  }
  return Status::Ok();
}

Status CudaModel::SendHost(dist::Communicator* group, const float* data, int64_t count, int peer) {
  Impl& s = *impl_;
  const int64_t chunk = s.HostMessageChunk();
  float* staging = s.A<float>(s.res[0]);
  for (int64_t at = 0; at < count; at += chunk) {
    const int64_t n = std::min(chunk, count - at);
    BM_CUDA_CHECK(cudaMemcpyAsync(staging, data + at, n * 4, cudaMemcpyHostToDevice, s.stream),
                  "send staging {} floats", n);
    BM_TRY(group->Send(staging, n, dist::DType::kFloat32, peer, s.stream));
    BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "sending {} floats to {}", count, peer);
  }
  return Status::Ok();
}

Status CudaModel::RecvHost(dist::Communicator* group, float* data, int64_t count, int peer) {
  Impl& s = *impl_;
  const int64_t chunk = s.HostMessageChunk();
  float* staging = s.A<float>(s.res[0]);
  for (int64_t at = 0; at < count; at += chunk) {
    const int64_t n = std::min(chunk, count - at);
    BM_TRY(group->Recv(staging, n, dist::DType::kFloat32, peer, s.stream));
    BM_CUDA_CHECK(cudaMemcpyAsync(data + at, staging, n * 4, cudaMemcpyDeviceToHost, s.stream),
                  "received {} floats", n);
    BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "receiving {} floats from {}", count, peer);
  }
  return Status::Ok();
}

double CudaModel::CommWaitSeconds() const { return impl_->dp.wait_ms() / 1000.0; }

std::map<std::string, double> CudaModel::CommWaitSecondsBySite() const {
  std::map<std::string, double> s;
  for (const auto& [site, ms] : impl_->dp.wait_ms_by_site()) s[site] = ms / 1000.0;
  return s;
}
const std::map<int, CommTiming::Reduction>& CudaModel::Reductions() const {
  return impl_->dp.reductions();
}
double CudaModel::HostQueueSeconds() const { return impl_->host_queue_s; }

Status CudaModel::ZeroGradients() {
  impl_->dp.ZeroGradients();  // done by the next training pass (Impl::Run)
  impl_->norm_fresh = false;
  return Status::Ok();
}

Result<double> CudaModel::ForwardBackward(const TokenBatch& batch, float grad_scale, bool last) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "ForwardBackward needs targets");
  if (s.Pp())
    return Status(ErrorCode::kInvalidArgument, "ForwardBackward with PP > 1: PipelineStep");
  const auto start = std::chrono::steady_clock::now();
  BM_TRY(s.Stage(batch));
  s.last_micro = last;
  BM_TRY(s.Run(grad_scale, Mode::kTrain));
  float* out = s.h_floats + s.MaxN();
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.loss_sum), 4, cudaMemcpyDeviceToHost, s.stream),
                "loss");
  s.host_queue_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "forward-backward B={} T={}", batch.batch,
                batch.seq);
  BM_TRY(s.dp.CollectWaits());
  if (s.run.profile) BM_TRY(s.CollectPhases());
  return static_cast<double>(*out);
}

Result<double> CudaModel::GradNorm() {
  Impl& s = *impl_;
  BM_TRY(s.GradSumSquares());
  float* out = s.h_floats + s.MaxN() + 1;
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.norm_sq), 4, cudaMemcpyDeviceToHost, s.stream),
                "norm");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "grad norm");
  s.norm_fresh = true;  // OptimizerStep clips with it
  return std::sqrt(static_cast<double>(*out));
}

Status CudaModel::OptimizerStep(const AdamWHyper& hyper) {
  Impl& s = *impl_;
  if (!s.norm_fresh) {
    BM_TRY(s.Phase("optimizer", [&] { return s.GradSumSquares(); }));
  }
  return s.Phase("optimizer", [&] { return s.dp.OptimizerStep(hyper, s.A<float>(s.norm_sq)); });
}

Status CudaModel::TokenLosses(const TokenBatch& batch, float* losses) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "TokenLosses needs targets");
  if (s.Pp()) return Status(ErrorCode::kInvalidArgument, "TokenLosses needs PP1");
  TokenBatch all = batch;
  all.mask = nullptr;  // every position's loss
  BM_TRY(s.Stage(all));
  BM_TRY(s.Run(0.0f, Mode::kLoss));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(losses, s.A<float>(s.losses), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "token losses");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "token losses B={} T={}", batch.batch, batch.seq);
  return s.dp.CollectWaits();  // (ZeRO-3's gathers waited for: the timing events are reused)
}

Status CudaModel::NextTokenArgmax(const TokenBatch& batch, int32_t* out) {
  Impl& s = *impl_;
  if (s.Pp() || s.Tp()) return Status(ErrorCode::kInvalidArgument, "NextTokenArgmax needs TP1 PP1");
  TokenBatch b = batch;
  b.targets = nullptr, b.mask = nullptr;  // (the rows' gradient: no backward runs)
  BM_TRY(s.Stage(b));
  BM_TRY(s.Run(0.0f, Mode::kArgmax));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(out, s.A<int>(s.argmax), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "argmax");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "argmax B={} T={}", batch.batch, batch.seq);
  return s.dp.CollectWaits();
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
