// RunOneFOneB: one pipeline stage's part of an optimizer step, the driver both
// backends share. It runs the stage's operations in the 1F1B order of
// pipeline_schedule.h and, before each, that schedule's exchange with the
// neighbours over the pipeline group: the previous operation's message out (an
// activation down, an input gradient up) and this one's in, at once
// (Communicator::SendRecv), so a stage's output goes down as soon as it is
// computed. Then, with tied embeddings, Megatron's embedding-group exchange:
// the last stage sends its copy's gradient to the first, which adds it and
// sends the sum back, so both copies take the same updates.
//
// What a stage computes is its backend's (PipelineStage); the driver only
// orders the calls and the messages. Collective over the pipeline group (and,
// inside the stage, whatever groups it uses). Not thread-safe.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "trainer/dist/communicator.h"

namespace bm::train::dist {

class PipelineStage {
 public:
  virtual ~PipelineStage() = default;

  // The message between stages for micro-batch `micro`: elements and type (the
  // residual stream this stage holds, [B·T or fewer rows, C]).
  virtual int64_t MessageElems(int micro) const = 0;
  virtual DType MessageType() const = 0;

  // Forward of `micro` in activation slot `slot` (0 <= slot < the slots the
  // driver was given): the first stage embeds the micro-batch's tokens, another
  // reads Input(slot), filled by the driver; leaves Output(slot).
  virtual Status Forward(int micro, int slot) = 0;
  // Backward of `micro` from slot `slot`: the last stage from the loss, another
  // from OutputGrad(), filled by the driver; gradients accumulate and leave
  // InputGrad() for the previous stage. `last`: the step's final backward.
  virtual Status Backward(int micro, int slot, bool last) = 0;
  // After the step's final backward, before the tied-embedding exchange (a
  // data-parallel layer finishes its reductions).
  virtual Status EndStep() = 0;

  // Buffers of MessageElems elements (device memory with a device communicator).
  virtual void* Input(int slot) = 0;
  virtual const void* Output(int slot) = 0;
  virtual void* OutputGrad() = 0;
  virtual const void* InputGrad() = 0;

  // Tied embeddings with several stages, on the first and the last stage: the
  // copy's gradient (n fp32) and room for the other copy's; n = 0 elsewhere.
  struct Tied {
    float* grad = nullptr;
    float* scratch = nullptr;
    int64_t n = 0;
  };
  virtual Tied TiedEmbedding() = 0;
  // grad += scratch (the first stage, after receiving the last stage's).
  virtual Status AddTiedScratch() = 0;

  // The CUDA stream a device communicator orders after; nullptr for host ones.
  virtual void* stream() = 0;
};

// Runs the stage's part of `micro_batches` micro-batches. `slots` activation
// slots must hold MaxInFlight(pp.size(), pp.rank(), micro_batches) of them
// (kInternal otherwise). wait_s (nullable) gains the seconds spent in the
// exchanges: the bubble as this stage saw it, and the transfers (with a device
// communicator, only the time to queue them).
Status RunOneFOneB(PipelineStage& stage, Communicator& pp, int micro_batches, int slots,
                   double* wait_s);

}  // namespace bm::train::dist
