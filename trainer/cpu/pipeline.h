// Pipeline: the CPU backend's pipeline parallelism — one stage's part of an
// optimizer step's micro-batches, in the 1F1B schedule of
// trainer/dist/pipeline_schedule.h, with the residual stream [B, T, C] sent to
// the next stage after each forward and its gradient sent back after each
// backward (Send/Recv on the pipeline group, in each link's order).
//
// With tied embeddings (GPT) the first stage's token embedding and the last
// stage's copy (trainer/model/shard.h) then get the sum of both gradients —
// Megatron's embedding-group all-reduce, here the last stage sending its
// gradient to the first, which adds and sends the sum back — so both copies
// see the same gradient and stay equal through the optimizer.
//
// Collective over the pipeline group (and, inside the model, the TP group);
// data-parallel reductions run as the DataParallel hooks say, the last
// micro-batch's during its backward, and are finished (EndMicroBatch) before
// the tied-embedding exchange. Not thread-safe (the backend's thread).
#pragma once

#include <span>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/data_parallel.h"
#include "trainer/cpu/model.h"
#include "trainer/dist/communicator.h"

namespace bm::train::cpu {

class Pipeline {
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

 private:
  Status Send(const float* data, int64_t n, int peer);
  Status Recv(float* data, int64_t n, int peer);
  Status ExchangeTiedEmbedding();

  Model<float>* model_;
  DataParallel* dp_;
  dist::Communicator* pp_;
  double wait_s_ = 0;
};

}  // namespace bm::train::cpu
