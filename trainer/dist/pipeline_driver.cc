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
  Status SendRecv(const void* send, int64_t n_send, int to, void* recv, int64_t n_recv, int from,
                  DType t) {
    return Timed([&] { return pp_.SendRecv(send, n_send, to, recv, n_recv, from, t, stream_); });
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
  if (slots < MaxInFlight(stages, me, m))
    return Errorf(ErrorCode::kInternal,
                  "pipeline stage {}: {} activation slots for {} micro-batches in flight", me,
                  slots, MaxInFlight(stages, me, m));
  Link link(pp, stage.stream(), wait_s);
  const DType type = stage.MessageType();
  // A message's buffer on this stage: an activation's slot, or the gradient buffer.
  auto sent = [&](const PipelineMessage& msg) -> const void* {
    return msg.activation ? stage.Output(msg.micro % slots) : stage.InputGrad();
  };
  auto received = [&](const PipelineMessage& msg) -> void* {
    return msg.activation ? stage.Input(msg.micro % slots) : stage.OutputGrad();
  };
  auto exchange = [&](const PipelineExchange& e) -> Status {
    const PipelineMessage &out = e.send, &in = e.recv;
    if (out.peer >= 0 && in.peer >= 0 && e.together)
      return link.SendRecv(sent(out), stage.MessageElems(out.micro), out.peer, received(in),
                           stage.MessageElems(in.micro), in.peer, type);
    if (out.peer >= 0) BM_TRY(link.Send(sent(out), stage.MessageElems(out.micro), type, out.peer));
    if (in.peer >= 0) BM_TRY(link.Recv(received(in), stage.MessageElems(in.micro), type, in.peer));
    return Status::Ok();
  };
  const std::vector<PipelineOp> ops = OneFOneB(stages, me, m);
  const std::vector<PipelineExchange> exchanges = Exchanges(stages, me, m);
  for (size_t k = 0; k < ops.size(); ++k) {
    BM_TRY(exchange(exchanges[k]));
    const int i = ops[k].micro;
    BM_TRY(ops[k].forward ? stage.Forward(i, i % slots) : stage.Backward(i, i % slots, i == m - 1));
  }
  BM_TRY(exchange(exchanges.back()));
  BM_TRY(stage.EndStep());
  return ExchangeTiedEmbedding(stage, link, stages, me);
}

}  // namespace bm::train::dist
