// The 1F1B pipeline schedule (PipeDream-Flush, Narayanan et al. 2021; Megatron-
// LM's non-interleaved schedule) of one optimizer step's M micro-batches over
// P stages, and the order of the messages between neighbouring stages —
// backend-independent, so every backend runs the same schedule.
//
// Stage s runs min(P - s - 1, M) forwards (warm-up), then alternates one
// forward and one backward, then runs the remaining backwards; micro-batch
// i's backward follows its forward on the last stage at once. So stage s
// holds the activations of at most min(P - s, M) micro-batches, and the
// bubble (the idle share of a stage's time, forward and backward taking one
// and two units) is (P - 1) / (M + P - 1).
//
// Messages: a forward sends the micro-batch's output to the next stage, a
// backward sends its input gradient to the previous one. With point-to-point
// sends that may wait for the matching receive (trainer/dist/communicator.h),
// both sides of a link must meet its messages in one order: the order of the
// downstream stage's operations (its forward i receives activation i, its
// backward i sends gradient i). The upstream stage therefore sends activation
// i as soon as its forward i is done and the link has reached it, and receives
// gradient i just before its backward i — LinkOrder gives it that order.
// Every link agreeing, a chain of stages cannot deadlock.
//
// Values only.
#pragma once

#include <vector>

namespace bm::train::dist {

struct PipelineOp {
  bool forward = true;
  int micro = 0;  // the micro-batch, 0 <= micro < M
};

// Stage `stage`'s operations, in order. Preconditions: 0 <= stage < stages, M >= 1.
std::vector<PipelineOp> OneFOneB(int stages, int stage, int micro_batches);

// The messages on the link between `stage` and stage + 1, in the order both
// meet them: {forward, i} = activation i goes down, {false, i} = gradient i
// comes up. Precondition: stage + 1 < stages.
std::vector<PipelineOp> LinkOrder(int stages, int stage, int micro_batches);

// Micro-batches stage `stage` keeps in flight at most: min(P - stage, M).
int MaxInFlight(int stages, int stage, int micro_batches);

// (P - 1) / (M + P - 1); 0 for one stage.
double BubbleFraction(int stages, int micro_batches);

}  // namespace bm::train::dist
