#include "trainer/cpu/cpu_backend.h"

#include <omp.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>

#include "trainer/cpu/data_parallel.h"
#include "trainer/cpu/model.h"
#include "trainer/cpu/ops/adamw.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/cpu/pipeline.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/shard.h"

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
    if (options.zero < 0 || options.zero > 3)
      return Errorf(ErrorCode::kInvalidArgument, "zero = {}: the ZeRO stage is 0, 1, 2 or 3",
                    options.zero);
    for (dist::Communicator* c : {options.dp, options.tp, options.pp})
      if (c && c->device())
        return Errorf(ErrorCode::kInvalidArgument,
                      "cpu backend: the {} communicator works on device buffers; the cpu needs a "
                      "host one",
                      c->transport());
    const int tp = options.tp ? options.tp->size() : 1, pp = options.pp ? options.pp->size() : 1;
    Result<ModelShard> shard = ModelShard::Make(
        model, {tp, options.tp ? options.tp->rank() : 0, pp, options.pp ? options.pp->rank() : 0});
    if (!shard.ok()) return shard.status();
    threads_ = options.threads > 0 ? options.threads
                                   : static_cast<int>(std::thread::hardware_concurrency());
    omp_set_num_threads(threads_);
    SetBlasThreads(threads_);
    options_ = options;
    model_ = std::make_unique<Model<float>>(*shard, options.max_batch, options.max_seq,
                                            options.sequence_parallel);
    model_->set_tensor_parallel(options.tp);
    if (!options.dp) {
      self_ = dist::MakeSelfCommunicator();
      options_.dp = self_.get();
    }
    dp_ = std::make_unique<DataParallel>(model_.get(), options_.dp, options.zero);
    if (options.grad_reduce_bf16) dp_->ReduceInBf16();
    dp_->KeepGatheredLast(options.zero3_keep_params);
    model_->set_hooks(dp_.get());
    if (pp > 1) pipeline_ = std::make_unique<Pipeline>(model_.get(), dp_.get(), options.pp);
    return Status::Ok();
  }

  // The whole model's buffers; with tensor or pipeline parallelism each rank
  // takes its slices (Set) and the shards are gathered (Get).
  Status SetParameters(std::span<const float> params) override {
    BM_TRY(CheckSize("SetParameters", params.size()));
    if (Whole()) return dp_->SetParameters(params);
    return SetParametersFrom(SourceOf(params));
  }
  Status SetParametersFrom(const ParamSource& source) override {
    if (!model_) return NotInitialized("SetParametersFrom");
    std::vector<float> local(model_->layout().total());
    if (Whole())
      source(0, local);
    else
      model_->shard().Extract(source, local);
    return dp_->SetParameters(local);
  }
  // The CPU's models are small: the gathered buffer, in one piece.
  Status GetParametersTo(const ParamSink& sink) const override {
    if (!model_) return NotInitialized("GetParametersTo");
    return GetWholeTo(model_->shard().full_size(), sink);
  }
  Status GetParameters(std::span<float> params) const override {
    if (!model_) return NotInitialized("GetParameters");
    if (!params.empty()) BM_TRY(CheckSize("GetParameters", params.size()));
    if (Whole()) {
      if (!params.empty()) return dp_->GetParameters(params);
      std::vector<float> scratch(model_->shard().full_size());  // take part, keep nothing
      return dp_->GetParameters(scratch);
    }
    std::vector<float> local(model_->layout().total());
    BM_TRY(dp_->GetParameters(local));
    auto link = [](dist::Communicator* c) {
      ShardLink l;
      if (!c) return l;
      l.send = [c](const float* data, int64_t count, int peer) {
        return c->Send(data, count, dist::DType::kFloat32, peer);
      };
      l.recv = [c](float* data, int64_t count, int peer) {
        return c->Recv(data, count, dist::DType::kFloat32, peer);
      };
      return l;
    };
    return GatherShardsToFirst(model_->shard(), local, params, link(options_.tp),
                               link(options_.pp));
  }
  Status GetGradients(std::span<float> grads) const override {
    BM_TRY(CheckSize("GetGradients", grads.size()));
    if (Whole()) return dp_->GetGradients(grads);
    std::vector<float> local(model_->layout().total());
    BM_TRY(dp_->GetGradients(local));
    return GatherWhole(local, grads);
  }
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const override {
    BM_TRY(CheckSize("GetOptimizerState", m.size()));
    BM_TRY(CheckSize("GetOptimizerState", v.size()));
    if (Whole()) return dp_->GetOptimizerState(m, v);
    const size_t n = model_->layout().total();
    std::vector<float> local_m(n), local_v(n);
    BM_TRY(dp_->GetOptimizerState(local_m, local_v));
    BM_TRY(GatherWhole(local_m, m));
    return GatherWhole(local_v, v);
  }
  Status SetOptimizerState(std::span<const float> m, std::span<const float> v) override {
    BM_TRY(CheckSize("SetOptimizerState", m.size()));
    BM_TRY(CheckSize("SetOptimizerState", v.size()));
    if (Whole()) return dp_->SetOptimizerState(m, v);
    const size_t n = model_->layout().total();
    std::vector<float> local_m(n), local_v(n);
    model_->shard().Extract(m, local_m);
    model_->shard().Extract(v, local_v);
    return dp_->SetOptimizerState(local_m, local_v);
  }

  int64_t LocalStateSize() const override { return dp_ ? dp_->local_state_size() : 0; }
  Status GetLocalState(std::span<float> params, std::span<float> m,
                       std::span<float> v) const override {
    BM_TRY(CheckLocal("GetLocalState", params.size(), m.size(), v.size()));
    return dp_->GetLocalState(params, m, v);
  }
  Status SetLocalState(std::span<const float> params, std::span<const float> m,
                       std::span<const float> v) override {
    BM_TRY(CheckLocal("SetLocalState", params.size(), m.size(), v.size()));
    return dp_->SetLocalState(params, m, v);
  }

  Status ZeroGrad() override {
    if (!model_) return NotInitialized("ZeroGrad");
    return dp_->ZeroGrad();
  }

  Result<LossSum> ForwardBackward(const MicroBatch& batch, float loss_scale) override {
    BM_TRY(CheckBatch("ForwardBackward", batch.inputs, batch.targets, batch.B, batch.T));
    if (pipeline_)
      return Status(ErrorCode::kUnsupported,
                    "cpu backend: ForwardBackward of one micro-batch with pipeline stages: use "
                    "ForwardBackwardStep");
    LossSum loss;
    dp_->BeginMicroBatch(batch.last);
    model_->ForwardBackward(batch.inputs, batch.targets, batch.loss_mask, batch.B, batch.T,
                            loss_scale, &loss.sum, &loss.count);
    BM_TRY(model_->status());
    BM_TRY(dp_->EndMicroBatch());
    return loss;
  }

  Result<LossSum> ForwardBackwardStep(std::span<const MicroBatch> micro,
                                      float loss_scale) override {
    if (!pipeline_) return Backend::ForwardBackwardStep(micro, loss_scale);
    for (const MicroBatch& b : micro)
      BM_TRY(CheckBatch("ForwardBackwardStep", b.inputs, b.targets, b.B, b.T));
    return pipeline_->Step(micro, loss_scale);
  }

  Result<float> GradNorm() override {
    if (!model_) return NotInitialized("GradNorm");
    BM_ASSIGN_OR_RETURN(double sum, dp_->GradNormSquared());
    // Each rank summed the parameters it owns: the model-parallel ranks
    // together count every parameter once (the data-parallel ones hold the same).
    for (dist::Communicator* c : {options_.tp, options_.pp})
      if (c && c->size() > 1)
        BM_TRY(c->AllReduce(&sum, 1, dist::DType::kFloat64, dist::ReduceOp::kSum));
    return static_cast<float>(std::sqrt(sum));
  }

  Status OptimizerStep(const AdamWStep& step) override {
    if (!model_) return NotInitialized("OptimizerStep");
    BM_ASSIGN_OR_RETURN(float norm, GradNorm());
    return dp_->OptimizerStep(step, norm);
  }

  Status TokenLosses(const MicroBatch& batch, float* losses) override {
    BM_TRY(CheckBatch("TokenLosses", batch.inputs, batch.targets, batch.B, batch.T));
    BM_TRY(CheckOneRank("TokenLosses"));
    model_->TokenLosses(batch.inputs, batch.targets, batch.B, batch.T, losses);
    return dp_->EndMicroBatch();
  }

  Status NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) override {
    BM_TRY(CheckBatch("NextTokenArgmax", inputs, nullptr, B, T));
    BM_TRY(CheckOneRank("NextTokenArgmax"));
    model_->NextTokenArgmax(inputs, B, T, argmax);
    return dp_->EndMicroBatch();
  }

  Status LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B, int64_t T,
                         int32_t* argmax) override {
    BM_TRY(CheckBatch("LastTokenArgmax", inputs, nullptr, B, T));
    BM_TRY(CheckOneRank("LastTokenArgmax"));
    for (int64_t b = 0; b < B; ++b)
      if (lengths[b] < 1 || lengths[b] > T)
        return Errorf(ErrorCode::kInvalidArgument,
                      "cpu backend: LastTokenArgmax: row {} has length {}, outside [1, {}]", b,
                      lengths[b], T);
    model_->LastTokenArgmax(inputs, lengths, B, T, argmax);
    return dp_->EndMicroBatch();
  }

  MemoryStats Memory() const override {
    MemoryStats s;
    if (model_) s.peak_bytes = model_->bytes() + dp_->bytes();
    s.device_total_bytes = PhysicalMemoryBytes();
    return s;
  }

  double CommWaitSeconds() const override { return dp_ ? dp_->comm_wait_s() : 0; }
  double PipelineWaitSeconds() const override { return pipeline_ ? pipeline_->wait_s() : 0; }

 private:
  static Status NotInitialized(std::string_view call) {
    return Errorf(ErrorCode::kInternal, "cpu backend: {} before Init", call);
  }
  bool Whole() const { return model_->shard().whole(); }
  Status CheckSize(std::string_view call, size_t n) const {
    if (!model_) return NotInitialized(call);
    const int64_t whole = model_->shard().full_size();
    if (static_cast<int64_t>(n) != whole)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cpu backend: {}: buffer of {} floats, model has {}", call, n, whole);
    return Status::Ok();
  }
  Status CheckOneRank(std::string_view call) const {
    if (Whole()) return Status::Ok();
    return Errorf(ErrorCode::kUnsupported,
                  "cpu backend: {} runs on one rank (TP1 PP1): evaluate the gathered checkpoint",
                  call);
  }

  // The shards gathered into the whole model (GatherShards) over the host groups.
  Status GatherWhole(std::span<const float> local, std::span<float> whole) const {
    auto over = [](dist::Communicator* c) -> ShardAllGather {
      if (!c || c->size() == 1) return nullptr;
      return [c](const float* send, float* recv, int64_t count) {
        return c->AllGather(send, recv, count, dist::DType::kFloat32);
      };
    };
    return GatherShards(model_->shard(), local, whole, over(options_.tp), over(options_.pp));
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

  Status CheckLocal(std::string_view call, size_t p, size_t m, size_t v) const {
    if (!model_) return NotInitialized(call);
    const size_t n = static_cast<size_t>(dp_->local_state_size());
    if (p != n || m != n || v != n)
      return Errorf(ErrorCode::kInvalidArgument,
                    "cpu backend: {}: buffers of {}, {} and {} floats, the local state has {}",
                    call, p, m, v, n);
    return Status::Ok();
  }

  BackendOptions options_;
  int threads_ = 1;
  std::unique_ptr<dist::Communicator> self_;  // the group of one when options.dp is null
  // Declared after model_: destroyed first (it holds hooks the model calls).
  std::unique_ptr<Model<float>> model_;
  std::unique_ptr<DataParallel> dp_;
  std::unique_ptr<Pipeline> pipeline_;  // pipeline stages (PP > 1) only
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
