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
// backward sends its input gradient to the previous one. Before each of its
// operations a stage sends what its previous operation produced and receives
// what this one needs, both at once (Communicator::SendRecv; Megatron's
// send_forward_recv_backward and send_backward_recv_forward), so that a
// stage's output goes down as soon as it is computed and both neighbours may
// send to each other at the same moment. One exchange is not done at once: a
// gradient sent up with a gradient received from below (a run of backwards)
// share the stage's gradient buffer, so the send goes first. After its last
// operation a stage sends that operation's message.
#pragma once

#include <vector>

namespace bm::train::dist {

struct PipelineOp {
  bool forward = true;
  int micro = 0;  // the micro-batch, 0 <= micro < M
};

// Stage `stage`'s operations, in order. Preconditions: 0 <= stage < stages, M >= 1.
std::vector<PipelineOp> OneFOneB(int stages, int stage, int micro_batches);

// A message: activation `micro` (going down) or its gradient (going up), to or
// from stage `peer`; peer < 0: none.
struct PipelineMessage {
  bool activation = true;
  int micro = -1;
  int peer = -1;
};
// What a stage sends and receives before one of its operations (or after the
// last); `together`: at once, else the send and then the receive.
struct PipelineExchange {
  PipelineMessage send, recv;
  bool together = true;
};
// Stage `stage`'s exchanges: element k before OneFOneB's operation k, and one
// more after the last (2·M + 1 in all).
std::vector<PipelineExchange> Exchanges(int stages, int stage, int micro_batches);

// Micro-batches stage `stage` keeps in flight at most: min(P - stage, M).
int MaxInFlight(int stages, int stage, int micro_batches);

// (P - 1) / (M + P - 1); 0 for one stage.
double BubbleFraction(int stages, int micro_batches);

}  // namespace bm::train::dist
