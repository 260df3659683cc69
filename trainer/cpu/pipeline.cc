#include "trainer/cpu/pipeline.h"

#include "trainer/dist/pipeline_schedule.h"

namespace bm::train::cpu {

Pipeline::Pipeline(Model<float>* model, DataParallel* dp, dist::Communicator* pp)
    : model_(model), dp_(dp), pp_(pp) {}

Result<LossSum> Pipeline::Step(std::span<const MicroBatch> micro, float loss_scale) {
  const int m = static_cast<int>(micro.size());
  const int slots = dist::MaxInFlight(pp_->size(), pp_->rank(), m);
  model_->EnsureSlots(slots);
  micro_ = micro;
  loss_scale_ = loss_scale;
  loss_ = LossSum();
  BM_TRY(dist::RunOneFOneB(*this, *pp_, m, slots, &wait_s_));
  BM_TRY(dp_->ReduceTiedUnits());  // zero 2-3: the tied embedding's sum, now complete
  return loss_;
}

int64_t Pipeline::MessageElems(int micro) const {
  return model_->StreamRows(micro_[micro].B * micro_[micro].T) * model_->config().hidden;
}

Status Pipeline::Forward(int micro, int slot) {
  const MicroBatch& b = micro_[micro];
  model_->ForwardStage(slot, b.inputs, b.B, b.T);
  return model_->status();
}

Status Pipeline::Backward(int micro, int slot, bool last) {
  const MicroBatch& b = micro_[micro];
  dp_->BeginMicroBatch(last);
  double sum = 0;
  int64_t count = 0;
  model_->BackwardStage(slot, b.inputs, b.targets, b.loss_mask, b.B, b.T, loss_scale_, &sum,
                        &count);
  BM_TRY(model_->status());
  loss_.sum += sum;
  loss_.count += count;
  return Status::Ok();
}

dist::PipelineStage::Tied Pipeline::TiedEmbedding() {
  const ParamTensor* wte = model_->shard().tied_across_stages();
  if (!wte) return {};
  tied_scratch_.resize(wte->numel);
  return {model_->grads().data() + wte->offset, tied_scratch_.data(), wte->numel};
}

Status Pipeline::AddTiedScratch() {
  const Tied t = TiedEmbedding();
  for (int64_t j = 0; j < t.n; ++j) t.grad[j] += t.scratch[j];
  return Status::Ok();
}

}  // namespace bm::train::cpu
