#include "trainer/dist/staged_communicator.h"

#include <cuda_runtime_api.h>

#include <cstddef>

#include "trainer/cuda/check.h"

namespace bm::train::dist {
namespace {

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::unique_ptr<Communicator> host) : host_(std::move(host)) {}
  ~StagedCommunicator() override {
    if (buffer_) cudaFreeHost(buffer_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string_view transport() const override { return "gloo-staged"; }
  bool device() const override { return true; }

  // A count of 0 or less goes straight to the host communicator, which checks
  // it before it touches a buffer.
  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, void* stream) override {
    if (count <= 0) return host_->AllReduce(data, count, dtype, op);
    const size_t bytes = Bytes(count, dtype);
    BM_TRY(Reserve(bytes));
    BM_TRY(ToHost(buffer_, data, bytes, stream, "all-reduce"));
    BM_TRY(host_->AllReduce(buffer_, count, dtype, op));
    return ToDevice(data, buffer_, bytes, stream, "all-reduce");
  }

  Status ReduceScatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp op,
                       void* stream) override {
    if (count <= 0) return host_->ReduceScatter(send, recv, count, dtype, op);
    const size_t bytes = Bytes(count, dtype), all = bytes * static_cast<size_t>(size());
    BM_TRY(Reserve(all + bytes));
    BM_TRY(ToHost(buffer_, send, all, stream, "reduce-scatter"));
    BM_TRY(host_->ReduceScatter(buffer_, buffer_ + all, count, dtype, op));
    return ToDevice(recv, buffer_ + all, bytes, stream, "reduce-scatter");
  }

  // send may be recv's own block: the copies go through the host buffer either way.
  Status AllGather(const void* send, void* recv, int64_t count, DType dtype,
                   void* stream) override {
    if (count <= 0) return host_->AllGather(send, recv, count, dtype);
    const size_t bytes = Bytes(count, dtype), all = bytes * static_cast<size_t>(size());
    BM_TRY(Reserve(all));
    char* mine = buffer_ + bytes * static_cast<size_t>(rank());
    BM_TRY(ToHost(mine, send, bytes, stream, "all-gather"));
    BM_TRY(host_->AllGather(mine, buffer_, count, dtype));
    return ToDevice(recv, buffer_, all, stream, "all-gather");
  }

  Status Broadcast(void* data, int64_t count, DType dtype, int root, void* stream) override {
    if (count <= 0) return host_->Broadcast(data, count, dtype, root);
    const size_t bytes = Bytes(count, dtype);
    BM_TRY(Reserve(bytes));
    BM_TRY(ToHost(buffer_, data, bytes, stream, "broadcast"));
    BM_TRY(host_->Broadcast(buffer_, count, dtype, root));
    return ToDevice(data, buffer_, bytes, stream, "broadcast");
  }

  Status Send(const void* data, int64_t count, DType dtype, int peer, void* stream) override {
    if (count <= 0) return host_->Send(data, count, dtype, peer);
    const size_t bytes = Bytes(count, dtype);
    BM_TRY(Reserve(bytes));
    BM_TRY(ToHost(buffer_, data, bytes, stream, "send"));
    return host_->Send(buffer_, count, dtype, peer);
  }

  Status Recv(void* data, int64_t count, DType dtype, int peer, void* stream) override {
    if (count <= 0) return host_->Recv(data, count, dtype, peer);
    const size_t bytes = Bytes(count, dtype);
    BM_TRY(Reserve(bytes));
    BM_TRY(host_->Recv(buffer_, count, dtype, peer));
    return ToDevice(data, buffer_, bytes, stream, "recv");
  }

  // The send staged in the first half of the pinned buffer, the receive in the second.
  Status SendRecv(const void* send, int64_t send_count, int to, void* recv, int64_t recv_count,
                  int from, DType dtype, void* stream) override {
    if (send_count < 0 || recv_count < 0)  // the host communicator's error
      return host_->SendRecv(send, send_count, to, recv, recv_count, from, dtype);
    if (send_count == 0) return Recv(recv, recv_count, dtype, from, stream);
    if (recv_count == 0) return Send(send, send_count, dtype, to, stream);
    const size_t out = Bytes(send_count, dtype), in = Bytes(recv_count, dtype);
    BM_TRY(Reserve(out + in));
    BM_TRY(ToHost(buffer_, send, out, stream, "send"));
    BM_TRY(host_->SendRecv(buffer_, send_count, to, buffer_ + out, recv_count, from, dtype));
    return ToDevice(recv, buffer_ + out, in, stream, "recv");
  }

  Status Barrier() override { return host_->Barrier(); }

 private:
  static size_t Bytes(int64_t count, DType dtype) {
    return static_cast<size_t>(count) * DTypeSize(dtype);
  }

  // The pinned buffer holds at least `bytes` (grown, never shrunk).
  Status Reserve(size_t bytes) {
    if (bytes <= capacity_) return Status::Ok();
    if (buffer_) BM_CUDA_CHECK(cudaFreeHost(buffer_), "staging buffer of {} bytes", capacity_);
    buffer_ = nullptr;
    capacity_ = 0;
    void* p = nullptr;
    BM_CUDA_CHECK(cudaMallocHost(&p, bytes), "staging buffer of {} bytes", bytes);
    buffer_ = static_cast<char*>(p);
    capacity_ = bytes;
    return Status::Ok();
  }

  // Copies and waits: to the host after the work queued on `stream` before the
  // call, to the device before the staging buffer is reused by the next call.
  static Status Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, void* stream,
                     const char* op) {
    auto s = static_cast<cudaStream_t>(stream);
    BM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s), "{} over gloo: copying {} bytes {}",
                  op, bytes, kind == cudaMemcpyDeviceToHost ? "to the host" : "to the device");
    BM_CUDA_CHECK(cudaStreamSynchronize(s), "{} over gloo: waiting for the stream", op);
    return Status::Ok();
  }
  static Status ToHost(void* host, const void* dev, size_t bytes, void* stream, const char* op) {
    return Copy(host, dev, bytes, cudaMemcpyDeviceToHost, stream, op);
  }
  static Status ToDevice(void* dev, const void* host, size_t bytes, void* stream, const char* op) {
    return Copy(dev, host, bytes, cudaMemcpyHostToDevice, stream, op);
  }

  std::unique_ptr<Communicator> host_;
  char* buffer_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> MakeStagedCommunicator(std::unique_ptr<Communicator> host) {
  return std::make_unique<StagedCommunicator>(std::move(host));
}

}  // namespace bm::train::dist
