#include "trainer/dist/communicator.h"

#include <cstring>

namespace bm::train::dist {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kBFloat16:
    case DType::kFloat16:
      return 2;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "fp16";
    case DType::kFloat64:
      return "fp64";
    case DType::kInt64:
      return "int64";
  }
  return "?";
}

Result<std::unique_ptr<WindowMemory>> Communicator::AllocateWindow(size_t bytes) {
  return Errorf(ErrorCode::kUnsupported,
                "a window of {} bytes: {} communicators have no registered windows (only NCCL)",
                bytes, transport());
}

namespace {

// A world of one host rank: collectives are copies at most.
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view transport() const override { return "self"; }
  bool device() const override { return false; }

  Status AllReduce(void*, int64_t count, DType, ReduceOp, void*) override {
    return CheckCount("AllReduce", count);
  }
  Status ReduceScatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp,
                       void*) override {
    return Copy("ReduceScatter", send, recv, count, dtype);
  }
  Status AllGather(const void* send, void* recv, int64_t count, DType dtype, void*) override {
    return Copy("AllGather", send, recv, count, dtype);
  }
  Status Broadcast(void*, int64_t count, DType, int root, void*) override {
    if (root != 0) return Errorf(ErrorCode::kInvalidArgument, "broadcast from rank {} of 1", root);
    return CheckCount("Broadcast", count);
  }
  Status Send(const void*, int64_t, DType, int peer, void*) override {
    return Errorf(ErrorCode::kInvalidArgument, "send to rank {} in a world of one rank", peer);
  }
  Status Recv(void*, int64_t, DType, int peer, void*) override {
    return Errorf(ErrorCode::kInvalidArgument, "receive from rank {} in a world of one rank", peer);
  }
  Status SendRecv(const void*, int64_t, int to, void*, int64_t, int, DType, void*) override {
    return Errorf(ErrorCode::kInvalidArgument, "send to rank {} in a world of one rank", to);
  }
  Status Barrier() override { return Status::Ok(); }

 private:
  static Status CheckCount(std::string_view op, int64_t count) {
    if (count < 0) return Errorf(ErrorCode::kInvalidArgument, "{} of {} elements", op, count);
    return Status::Ok();
  }
  static Status Copy(std::string_view op, const void* send, void* recv, int64_t count,
                     DType dtype) {
    BM_TRY(CheckCount(op, count));
    if (send != recv) std::memmove(recv, send, static_cast<size_t>(count) * DTypeSize(dtype));
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Communicator> MakeSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

}  // namespace bm::train::dist
