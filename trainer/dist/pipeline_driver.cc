#include "trainer/dist/pipeline_driver.h"

#include <chrono>
#include <vector>

#include "trainer/dist/pipeline_schedule.h"

namespace bm::train::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Send and Recv on the pipeline group, timed.
class Link {
 public:
  Link(Communicator& pp, void* stream, double* wait_s) : pp_(pp), stream_(stream), wait_(wait_s) {}
  Status Send(const void* data, int64_t n, DType t, int peer) {
    return Timed([&] { return pp_.Send(data, n, t, peer, stream_); });
  }
  Status Recv(void* data, int64_t n, DType t, int peer) {
    return Timed([&] { return pp_.Recv(data, n, t, peer, stream_); });
  }

 private:
  template <typename F>
  Status Timed(F&& f) {
    const Clock::time_point t0 = Clock::now();
    Status s = f();
    if (wait_) *wait_ += std::chrono::duration<double>(Clock::now() - t0).count();
    return s;
  }
  Communicator& pp_;
  void* stream_;
  double* wait_;
};

Status ExchangeTiedEmbedding(PipelineStage& stage, Link& link, int stages, int me) {
  const PipelineStage::Tied tied = stage.TiedEmbedding();
  if (tied.n == 0 || stages == 1 || (me != 0 && me != stages - 1)) return Status::Ok();
  if (me == stages - 1) {
    BM_TRY(link.Send(tied.grad, tied.n, DType::kFloat32, 0));
    return link.Recv(tied.grad, tied.n, DType::kFloat32, 0);
  }
  BM_TRY(link.Recv(tied.scratch, tied.n, DType::kFloat32, stages - 1));
  BM_TRY(stage.AddTiedScratch());
  return link.Send(tied.grad, tied.n, DType::kFloat32, stages - 1);
}

}  // namespace

Status RunOneFOneB(PipelineStage& stage, Communicator& pp, int micro_batches, int slots,
                   double* wait_s) {
  const int stages = pp.size(), me = pp.rank(), m = micro_batches;
  const bool first = me == 0, last = me == stages - 1;
  if (slots < MaxInFlight(stages, me, m))
    return Errorf(ErrorCode::kInternal,
                  "pipeline stage {}: {} activation slots for {} micro-batches in flight", me,
                  slots, MaxInFlight(stages, me, m));
  Link link(pp, stage.stream(), wait_s);
  const std::vector<PipelineOp> ops = OneFOneB(stages, me, m);
  const std::vector<PipelineOp> order = last ? std::vector<PipelineOp>() : LinkOrder(stages, me, m);
  size_t next = 0;                    // the next message on the link to stage + 1
  std::vector<bool> forward_done(m);  // forwards whose output may go down
  const DType type = stage.MessageType();
  // Sends every activation the link has reached and this stage has computed.
  auto send_ready = [&]() -> Status {
    while (next < order.size() && order[next].forward && forward_done[order[next].micro]) {
      const int i = order[next++].micro;
      BM_TRY(link.Send(stage.Output(i % slots), stage.MessageElems(i), type, me + 1));
    }
    return Status::Ok();
  };
  for (const PipelineOp& op : ops) {
    const int i = op.micro;
    if (op.forward) {
      if (!first) BM_TRY(link.Recv(stage.Input(i % slots), stage.MessageElems(i), type, me - 1));
      BM_TRY(stage.Forward(i, i % slots));
      forward_done[i] = true;
      BM_TRY(send_ready());
      continue;
    }
    if (!last) {
      BM_TRY(send_ready());
      if (next >= order.size() || order[next].forward || order[next].micro != i)
        return Errorf(ErrorCode::kInternal,
                      "pipeline stage {}: the link to stage {} is not at gradient {}", me, me + 1,
                      i);
      ++next;
      BM_TRY(link.Recv(stage.OutputGrad(), stage.MessageElems(i), type, me + 1));
    }
    BM_TRY(stage.Backward(i, i % slots, i == m - 1));
    if (!first) BM_TRY(link.Send(stage.InputGrad(), stage.MessageElems(i), type, me - 1));
  }
  BM_TRY(stage.EndStep());
  return ExchangeTiedEmbedding(stage, link, stages, me);
}

}  // namespace bm::train::dist
