#include "trainer/cpu/llava_trainer.h"

#include <omp.h>

#include <cmath>
#include <thread>

#include "trainer/cpu/ops/adamw.h"
#include "trainer/cpu/ops/matmul.h"

namespace bm::train::cpu {

LlavaTrainer::~LlavaTrainer() {
  dp_.reset();  // before the model whose hooks it is
  model_.reset();
}

Result<std::unique_ptr<LlavaTrainer>> LlavaTrainer::Create(const LlavaConfig& config,
                                                           const BackendOptions& options,
                                                           int64_t max_images,
                                                           Trainable trainable) {
  BM_TRY(Validate(config));
  if (options.precision != Precision::kFp32)
    return Status(ErrorCode::kUnsupported, "LLaVA on the cpu: fp32 only");
  for (dist::Communicator* c : {options.tp, options.pp})
    if (c && c->size() > 1)
      return Status(ErrorCode::kUnsupported,
                    "LLaVA on the cpu: data parallelism only (layout DPn), no TP or PP");
  if (options.zero < 0 || options.zero > 3)
    return Errorf(ErrorCode::kInvalidArgument, "zero = {}: the ZeRO stage is 0, 1, 2 or 3",
                  options.zero);
  if (options.max_batch < 1 || options.max_seq < 1 || options.max_seq > config.text.max_seq)
    return Errorf(ErrorCode::kInvalidArgument,
                  "LLaVA on the cpu: batch {} and sequence {} must be >= 1, sequence <= max_seq {}",
                  options.max_batch, options.max_seq, config.text.max_seq);
  if (options.dp && options.dp->device())
    return Status(ErrorCode::kInvalidArgument,
                  "LLaVA on the cpu: the data-parallel communicator must be a host one");
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(threads);
  SetBlasThreads(threads);
  std::unique_ptr<LlavaTrainer> t(new LlavaTrainer());
  t->comm_ = options.dp;
  if (!t->comm_) {
    t->self_ = dist::MakeSelfCommunicator();
    t->comm_ = t->self_.get();
  }
  t->model_ =
      std::make_unique<LlavaModel<float>>(config, options.max_batch, options.max_seq, max_images);
  t->dp_ = std::make_unique<DataParallel>(&t->model_->text(), t->comm_, options.zero);
  t->model_->text().set_hooks(t->dp_.get());
  t->model_->set_train_tower(trainable.tower);
  t->train_lm_ = trainable.language_model;
  t->parts_.push_back({trainable.tower,
                       &t->model_->tower().params(),
                       &t->model_->tower().grads(),
                       &t->model_->tower().layout(),
                       {},
                       {}});
  t->parts_.push_back({trainable.projector,
                       &t->model_->projector().params(),
                       &t->model_->projector().grads(),
                       &t->model_->projector().layout(),
                       {},
                       {}});
  for (Part& p : t->parts_) {
    if (!p.trained) continue;
    p.m.assign(p.params->size(), 0.0f);
    p.v.assign(p.params->size(), 0.0f);
  }
  return t;
}

Status LlavaTrainer::SetParameters(std::span<const float> whole) {
  if (static_cast<int64_t>(whole.size()) != total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaTrainer::SetParameters: {} floats, the model "
                  "has {}",
                  whole.size(), total());
  const LlavaLayout& l = layout();
  std::copy(whole.begin() + l.vision_offset(), whole.begin() + l.projector_offset(),
            model_->tower().params().begin());
  std::copy(whole.begin() + l.projector_offset(), whole.begin() + l.text_offset(),
            model_->projector().params().begin());
  return dp_->SetParameters(whole.subspan(l.text_offset()));
}

Status LlavaTrainer::GetParameters(std::span<float> whole) {
  const LlavaLayout& l = layout();
  if (whole.empty()) {
    std::vector<float> scratch(l.text().total());
    return dp_->GetParameters(scratch);
  }
  if (static_cast<int64_t>(whole.size()) != total())
    return Errorf(ErrorCode::kInvalidArgument,
                  "LlavaTrainer::GetParameters: {} floats, the model "
                  "has {}",
                  whole.size(), total());
  const auto& tower = model_->tower().params();
  const auto& proj = model_->projector().params();
  std::copy(tower.begin(), tower.end(), whole.begin() + l.vision_offset());
  std::copy(proj.begin(), proj.end(), whole.begin() + l.projector_offset());
  return dp_->GetParameters(whole.subspan(l.text_offset()));
}

Status LlavaTrainer::ZeroGrad() {
  for (Part& p : parts_) std::fill(p.grads->begin(), p.grads->end(), 0.0f);
  return dp_->ZeroGrad();
}

Result<LossSum> LlavaTrainer::ForwardBackward(const LlavaMicroBatch& batch, float loss_scale,
                                              bool last) {
  LossSum loss;
  dp_->BeginMicroBatch(last);
  Status s = model_->ForwardBackward(batch, loss_scale, &loss.sum, &loss.count);
  BM_TRY(dp_->EndMicroBatch());  // the reductions the backward started, whatever happened
  BM_TRY(s);
  if (last && comm_->size() > 1)
    for (Part& p : parts_)
      if (p.trained)
        BM_TRY(comm_->AllReduce(p.grads->data(), static_cast<int64_t>(p.grads->size()),
                                dist::DType::kFloat32, dist::ReduceOp::kSum));
  return loss;
}

Result<float> LlavaTrainer::GradNorm() {
  double sum = 0;
  if (train_lm_) {
    BM_ASSIGN_OR_RETURN(sum, dp_->GradNormSquared());
  }
  // the replicated parts' gradients are the same on every rank: counted once
  for (const Part& p : parts_)
    if (p.trained) sum += SumOfSquares(p.grads->data(), p.grads->size());
  return static_cast<float>(std::sqrt(sum));
}

Status LlavaTrainer::OptimizerStep(const AdamWStep& step) {
  BM_ASSIGN_OR_RETURN(float norm, GradNorm());
  if (train_lm_) BM_TRY(dp_->OptimizerStep(step, norm));
  // as DataParallel::OptimizerStep: clipping and 1 / the loss scale in one factor
  const float scale = ClipScale(norm * step.grad_scale, step.grad_clip) * step.grad_scale;
  for (Part& p : parts_) {
    if (!p.trained) continue;
    for (const ParamTensor& t : p.layout->tensors())
      AdamWUpdate(p.params->data() + t.offset, p.grads->data() + t.offset, p.m.data() + t.offset,
                  p.v.data() + t.offset, t.numel, step.lr, step.beta1, step.beta2, step.eps,
                  t.weight_decay && !t.frozen ? step.weight_decay : 0.0f, scale, step.step);
  }
  return Status::Ok();
}

}  // namespace bm::train::cpu
