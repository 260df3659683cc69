#include "trainer/cpu/pipeline.h"

#include <chrono>
#include <vector>

#include "trainer/dist/pipeline_schedule.h"

namespace bm::train::cpu {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Pipeline::Pipeline(Model<float>* model, DataParallel* dp, dist::Communicator* pp)
    : model_(model), dp_(dp), pp_(pp) {}

Status Pipeline::Send(const float* data, int64_t n, int peer) {
  const Clock::time_point t0 = Clock::now();
  Status s = pp_->Send(data, n, dist::DType::kFloat32, peer);
  wait_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  return s;
}

Status Pipeline::Recv(float* data, int64_t n, int peer) {
  const Clock::time_point t0 = Clock::now();
  Status s = pp_->Recv(data, n, dist::DType::kFloat32, peer);
  wait_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  return s;
}

Result<LossSum> Pipeline::Step(std::span<const MicroBatch> micro, float loss_scale) {
  const int stages = pp_->size(), stage = pp_->rank(), m = static_cast<int>(micro.size());
  const bool first = stage == 0, last = stage == stages - 1;
  const int slots = dist::MaxInFlight(stages, stage, m);
  model_->EnsureSlots(slots);
  const std::vector<dist::PipelineOp> ops = dist::OneFOneB(stages, stage, m);
  const std::vector<dist::PipelineOp> link =
      last ? std::vector<dist::PipelineOp>() : dist::LinkOrder(stages, stage, m);
  size_t next = 0;                    // the next message on the link to stage + 1
  std::vector<bool> forward_done(m);  // forwards whose output may go down
  const int64_t C = model_->config().hidden;
  auto size = [&](int i) { return model_->StreamRows(micro[i].B * micro[i].T) * C; };
  // Sends every activation the link has reached and this stage has computed.
  auto send_ready = [&]() -> Status {
    while (next < link.size() && link[next].forward && forward_done[link[next].micro]) {
      const int i = link[next++].micro;
      BM_TRY(Send(model_->stage_output(i % slots), size(i), stage + 1));
    }
    return Status::Ok();
  };
  LossSum loss;
  for (const dist::PipelineOp& op : ops) {
    const int i = op.micro;
    const MicroBatch& b = micro[i];
    if (op.forward) {
      if (!first) BM_TRY(Recv(model_->stage_input(i % slots), size(i), stage - 1));
      model_->ForwardStage(i % slots, b.inputs, b.B, b.T);
      BM_TRY(model_->status());
      forward_done[i] = true;
      BM_TRY(send_ready());
      continue;
    }
    if (!last) {
      BM_TRY(send_ready());
      if (next >= link.size() || link[next].forward || link[next].micro != i)
        return Errorf(ErrorCode::kInternal,
                      "pipeline stage {}: the link to stage {} is not at "
                      "gradient {}",
                      stage, stage + 1, i);
      ++next;
      BM_TRY(Recv(model_->output_grad(), size(i), stage + 1));
    }
    dp_->BeginMicroBatch(i == m - 1);
    double sum = 0;
    int64_t count = 0;
    model_->BackwardStage(i % slots, b.inputs, b.targets, b.loss_mask, b.B, b.T, loss_scale, &sum,
                          &count);
    BM_TRY(model_->status());
    loss.sum += sum;
    loss.count += count;
    if (!first) BM_TRY(Send(model_->input_grad(), size(i), stage - 1));
  }
  BM_TRY(dp_->EndMicroBatch());
  BM_TRY(ExchangeTiedEmbedding());
  return loss;
}

Status Pipeline::ExchangeTiedEmbedding() {
  const int stages = pp_->size(), stage = pp_->rank();
  if (!model_->config().tied_embeddings || stages == 1 || (stage != 0 && stage != stages - 1))
    return Status::Ok();
  const ParamTensor* wte = model_->shard().token_embedding();
  float* grad = model_->grads().data() + wte->offset;
  if (stage == stages - 1) {
    BM_TRY(Send(grad, wte->numel, 0));
    return Recv(grad, wte->numel, 0);
  }
  std::vector<float> other(wte->numel);
  BM_TRY(Recv(other.data(), wte->numel, stages - 1));
  for (int64_t j = 0; j < wte->numel; ++j) grad[j] += other[j];
  return Send(grad, wte->numel, stages - 1);
}

}  // namespace bm::train::cpu
