// Pipeline: the CPU backend's pipeline parallelism — one stage's part of an
// optimizer step's micro-batches, run by the shared 1F1B driver
// (trainer/dist/pipeline_driver.h) over this model's stage: the residual
// stream [B, T, C] (or this rank's rows of it under sequence parallelism) sent
// to the next stage after each forward and its gradient sent back after each
// backward; with tied embeddings (GPT) the first stage's token embedding and
// the last stage's copy (trainer/model/shard.h) get the sum of both gradients.
//
// Collective over the pipeline group (and, inside the model, the TP and DP
// groups); data-parallel reductions run as the DataParallel hooks say (zero
// 0-1: the last micro-batch's during its backward; 2-3: every micro-batch's)
// and are finished (EndMicroBatch) before the tied-embedding exchange; at zero
// 2-3 the units holding the tied embedding are reduced after it
// (DataParallel::ReduceTiedUnits). Not thread-safe (the backend's thread).
#pragma once

#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/data_parallel.h"
#include "trainer/cpu/model.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/pipeline_driver.h"

namespace bm::train::cpu {

class Pipeline final : public dist::PipelineStage {
 public:
  // All outlive this; pp is the pipeline group of model->shard().rank().pp ranks.
  Pipeline(Model<float>* model, DataParallel* dp, dist::Communicator* pp);

  // Forward and backward of every micro-batch (all the same B and T), adding
  // the gradients of Σ loss_scale · mask · loss. The loss sum and count on the
  // last stage, zero on the others.
  Result<LossSum> Step(std::span<const MicroBatch> micro, float loss_scale);

  // Seconds spent in Send/Recv between stages since construction: the
  // pipeline bubble and the transfers, as this stage saw them.
  double wait_s() const { return wait_s_; }

  // dist::PipelineStage, for the driver.
  int64_t MessageElems(int micro) const override;
  dist::DType MessageType() const override { return dist::DType::kFloat32; }
  Status Forward(int micro, int slot) override;
  Status Backward(int micro, int slot, bool last) override;
  Status EndStep() override { return dp_->EndMicroBatch(); }
  void* Input(int slot) override { return model_->stage_input(slot); }
  const void* Output(int slot) override { return model_->stage_output(slot); }
  void* OutputGrad() override { return model_->output_grad(); }
  const void* InputGrad() override { return model_->input_grad(); }
  Tied TiedEmbedding() override;
  Status AddTiedScratch() override;
  void* stream() override { return nullptr; }

 private:
  Model<float>* model_;
  DataParallel* dp_;
  dist::Communicator* pp_;
  double wait_s_ = 0;
  // The step being run.
  std::span<const MicroBatch> micro_;
  float loss_scale_ = 0;
  LossSum loss_;
  std::vector<float> tied_scratch_;
};

}  // namespace bm::train::cpu
