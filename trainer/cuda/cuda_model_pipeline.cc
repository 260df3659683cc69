// CudaModel's pipeline stage: what the shared 1F1B driver (trainer/dist/pipeline_driver.h)
// calls, on the model's compute stream. A forward runs the embeddings (first stage) and the
// stage's layers in the micro-batch's activation slot; a backward runs the head from the
// loss (last stage) or starts from the received output gradient in dres, then the layers
// backward and the embedding backward (first stage), leaving dres = the input gradient.
// With tied embeddings the first and last stages exchange their copies' gradients after the
// step's backward (the driver), then dp reduces them into the own slices at ZeRO 2-3
// (CudaDataParallel::ReduceTiedUnits).
#include "trainer/cuda/cuda_model_impl.h"
#include "trainer/dist/pipeline_driver.h"

namespace bm::train::cuda {

class CudaModel::Stage final : public dist::PipelineStage {
 public:
  Stage(CudaModel::Impl& s, std::span<const TokenBatch> micro, float grad_scale)
      : s_(s), micro_(micro), grad_scale_(grad_scale) {}

  double loss() const { return loss_; }

  int64_t MessageElems(int micro) const override {
    return static_cast<int64_t>(s_.StreamRows(micro_[micro].batch * micro_[micro].seq)) * s_.C();
  }
  dist::DType MessageType() const override { return s_.ActType(); }

  Status Forward(int micro, int slot) override {
    s_.cur_slot = slot;
    BM_TRY(s_.Stage(micro_[micro]));
    return WithElementType(s_.run.dtype,
                           [&](auto tag) { return s_.ForwardLayers<decltype(tag)>(); });
  }

  Status Backward(int micro, int slot, bool last) override {
    s_.cur_slot = slot;
    BM_TRY(s_.Stage(micro_[micro]));
    // The step's first backward writes the gradients (dp: ZeroGradients was called).
    BM_TRY(s_.dp.BeginMicroBatch(last));
    s_.first_micro = s_.dp.writes_fresh_gradients();
    s_.last_micro = last;
    BM_TRY(WithElementType(s_.run.dtype, [&](auto tag) -> Status {
      using T = decltype(tag);
      if (s_.spec.head) BM_TRY(s_.Head<T>(grad_scale_, Mode::kTrain));
      return s_.BackwardLayers<T>();
    }));
    if (!s_.spec.head) return Status::Ok();
    float* out = s_.h_floats + s_.MaxN();
    BM_CUDA_CHECK(
        cudaMemcpyAsync(out, s_.A<float>(s_.loss_sum), 4, cudaMemcpyDeviceToHost, s_.stream),
        "loss");
    BM_CUDA_CHECK(cudaStreamSynchronize(s_.stream), "pipeline backward of micro-batch {}", micro);
    loss_ += *out;
    return Status::Ok();
  }

  Status EndStep() override {
    s_.norm_fresh = false;
    return s_.dp.EndMicroBatch();
  }

  void* Input(int slot) override { return Stream(slot, 0); }
  const void* Output(int slot) override { return Stream(slot, s_.Layers()); }
  void* OutputGrad() override { return s_.A<char>(s_.dres); }
  const void* InputGrad() override { return s_.A<char>(s_.dres); }

  Tied TiedEmbedding() override {
    const Range r = s_.TiedAcrossStages();
    if (r.numel == 0) return {};
    float* scratch = s_.spec.embeddings ? s_.A<float>(s_.tied_scratch) : nullptr;
    return {s_.G(r.offset), scratch, static_cast<int64_t>(r.numel)};
  }
  Status AddTiedScratch() override {
    const Tied t = TiedEmbedding();
    return AccumulateF32(t.grad, t.scratch, static_cast<size_t>(t.n), s_.stream);
  }

  void* stream() override { return s_.stream; }

 private:
  char* Stream(int slot, int l) const {
    return s_.A<char>(s_.res[static_cast<size_t>(slot) * (s_.Layers() + 1) + l]);
  }

  CudaModel::Impl& s_;
  std::span<const TokenBatch> micro_;
  float grad_scale_;
  double loss_ = 0;
};

Result<double> CudaModel::PipelineStep(std::span<const TokenBatch> micro, float grad_scale) {
  Impl& s = *impl_;
  if (!s.Pp()) return Status(ErrorCode::kInvalidArgument, "PipelineStep needs pipeline stages");
  for (const TokenBatch& b : micro)
    if (!b.targets) return Status(ErrorCode::kInvalidArgument, "PipelineStep needs targets");
  Stage stage(s, micro, grad_scale);
  BM_TRY(dist::RunOneFOneB(stage, *s.run.pp, static_cast<int>(micro.size()), s.run.pipeline_slots,
                           &s.pipeline_wait_s));
  // ZeRO 2-3: the tied embedding's units, kept whole through the step, reduced into the own
  // slices now that both stages' gradients are in them (nothing otherwise).
  BM_TRY(s.dp.ReduceTiedUnits());
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "pipeline step of {} micro-batches", micro.size());
  BM_TRY(s.dp.CollectWaits());
  if (s.run.profile) BM_TRY(s.CollectPhases());
  return stage.loss();
}

double CudaModel::PipelineWaitSeconds() const { return impl_->pipeline_wait_s; }

}  // namespace bm::train::cuda
