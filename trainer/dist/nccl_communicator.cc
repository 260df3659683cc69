#include "trainer/dist/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <fmt/ranges.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/cuda/check.h"

namespace bm::train::dist {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watchdog looks at the operations in flight.
constexpr auto kWatchInterval = std::chrono::milliseconds(50);

Status NcclError(ncclResult_t result, std::string_view call, std::string_view what,
                 ncclComm_t comm) {
  // A remote error is a peer that went away ("remote process exited or there was a network
  // error", nccl.h); a system error a link or this machine; anything else is ours.
  const ErrorCode code = result == ncclRemoteError   ? ErrorCode::kPeerLost
                         : result == ncclSystemError ? ErrorCode::kUnavailable
                                                     : ErrorCode::kFailed;
  const char* last = ncclGetLastError(comm);
  return Errorf(code, "{} failed: {} ({}){} [{}]", call, ncclGetErrorString(result),
                static_cast<int>(result), last && *last ? fmt::format(": {}", last) : "", what);
}

#define BM_NCCL_CHECK(call, comm, what)                                                       \
  do {                                                                                        \
    ncclResult_t bm_nccl_result_ = (call);                                                    \
    if (bm_nccl_result_ != ncclSuccess) return NcclError(bm_nccl_result_, #call, what, comm); \
  } while (0)

void SetNcclDefaults() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t NcclOp(ReduceOp op) { return op == ReduceOp::kSum ? ncclSum : ncclMax; }

// Polls a non-blocking communicator until `result` is no longer in progress
// or the deadline passes (then ncclInProgress is returned).
ncclResult_t Settle(ncclComm_t comm, ncclResult_t result, Clock::time_point deadline) {
  while (result == ncclInProgress) {
    if (Clock::now() > deadline) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (ncclResult_t st = ncclCommGetAsyncError(comm, &result); st != ncclSuccess) return st;
  }
  return result;
}

// Polls until the communicator has nothing in progress. A registration returns ncclSuccess and
// may still finish in NCCL's background; a later call would find ncclInProgress.
ncclResult_t SettleAll(ncclComm_t comm, ncclResult_t result, Clock::time_point deadline) {
  if (result != ncclSuccess && result != ncclInProgress) return result;
  return Settle(comm, ncclInProgress, deadline);
}

// One operation queued on a stream, followed by the watchdog.
struct Op {
  std::string_view name;
  int64_t count = 0;
  DType dtype = DType::kFloat32;
  int peer = -1;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, std::string group, std::vector<int> members, int rank,
                   int device, double timeout_s)
      : comm_(comm),
        group_(std::move(group)),
        members_(std::move(members)),
        rank_(rank),
        device_(device),
        timeout_s_(timeout_s),
        timeout_(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000))) {}

  ~NcclCommunicator() override {
    if (watchdog_.joinable()) {
      {
        std::lock_guard lock(mu_);
        stop_ = true;
      }
      wake_.notify_all();
      watchdog_.join();
    }
    cudaSetDevice(device_);
    if (!aborted_) {
      // Finalize flushes what is still queued; a peer that is gone cannot
      // make it hang longer than the timeout.
      ncclResult_t r = Settle(comm_, ncclCommFinalize(comm_), Clock::now() + timeout_);
      if (r == ncclSuccess)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
    for (const Pending& p : pending_) cudaEventDestroy(p.done);
    for (cudaEvent_t e : idle_events_) cudaEventDestroy(e);
    if (barrier_stream_) cudaStreamDestroy(barrier_stream_);
    if (barrier_word_) cudaFree(barrier_word_);
  }

  // What the constructor cannot fail at: the barrier's stream and word, and
  // the watchdog.
  Status Start() {
    BM_CUDA_CHECK(cudaStreamCreateWithFlags(&barrier_stream_, cudaStreamNonBlocking),
                  "barrier stream of group '{}'", group_);
    BM_CUDA_CHECK(cudaMalloc(&barrier_word_, sizeof(int64_t)), "barrier word of group '{}'",
                  group_);
    BM_CUDA_CHECK(cudaMemset(barrier_word_, 0, sizeof(int64_t)), "barrier word of group '{}'",
                  group_);
    watchdog_ = std::thread([this] { Watch(); });
    return Status::Ok();
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string_view transport() const override { return "nccl"; }
  bool device() const override { return true; }

  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, void* stream) override {
    return Issue({"AllReduce", count, dtype}, stream, [&](cudaStream_t s) {
      return ncclAllReduce(data, data, static_cast<size_t>(count), NcclType(dtype), NcclOp(op),
                           comm_, s);
    });
  }

  Status ReduceScatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp op,
                       void* stream) override {
    return Issue({"ReduceScatter", count, dtype}, stream, [&](cudaStream_t s) {
      return ncclReduceScatter(send, recv, static_cast<size_t>(count), NcclType(dtype), NcclOp(op),
                               comm_, s);
    });
  }

  Status AllGather(const void* send, void* recv, int64_t count, DType dtype,
                   void* stream) override {
    // NCCL works in place when send is recv's own block, as the contract allows.
    return Issue({"AllGather", count, dtype}, stream, [&](cudaStream_t s) {
      return ncclAllGather(send, recv, static_cast<size_t>(count), NcclType(dtype), comm_, s);
    });
  }

  Status Broadcast(void* data, int64_t count, DType dtype, int root, void* stream) override {
    if (root < 0 || root >= size())
      return Errorf(ErrorCode::kInvalidArgument, "nccl Broadcast from rank {} in group '{}' of {}",
                    root, group_, size());
    return Issue({"Broadcast", count, dtype}, stream, [&](cudaStream_t s) {
      return ncclBroadcast(data, data, static_cast<size_t>(count), NcclType(dtype), root, comm_, s);
    });
  }

  Status Send(const void* data, int64_t count, DType dtype, int peer, void* stream) override {
    BM_TRY(CheckPeer("Send to", peer));
    return Issue({"Send", count, dtype, peer}, stream, [&](cudaStream_t s) {
      return ncclSend(data, static_cast<size_t>(count), NcclType(dtype), peer, comm_, s);
    });
  }

  Status Recv(void* data, int64_t count, DType dtype, int peer, void* stream) override {
    BM_TRY(CheckPeer("Recv from", peer));
    return Issue({"Recv", count, dtype, peer}, stream, [&](cudaStream_t s) {
      return ncclRecv(data, static_cast<size_t>(count), NcclType(dtype), peer, comm_, s);
    });
  }

  // Both in one NCCL group: neither waits for the other.
  Status SendRecv(const void* send, int64_t send_count, int to, void* recv, int64_t recv_count,
                  int from, DType dtype, void* stream) override {
    BM_TRY(CheckPeer("Send to", to));
    BM_TRY(CheckPeer("Recv from", from));
    if (send_count < 0 || recv_count < 0)
      return Errorf(ErrorCode::kInvalidArgument,
                    "nccl SendRecv of {} and {} elements in group '{}'", send_count, recv_count,
                    group_);
    return Issue({"SendRecv", send_count + recv_count, dtype, to}, stream, [&](cudaStream_t s) {
      ncclResult_t r = ncclGroupStart();
      if (r != ncclSuccess) return r;
      if (send_count > 0)
        r = ncclSend(send, static_cast<size_t>(send_count), NcclType(dtype), to, comm_, s);
      if (r == ncclSuccess && recv_count > 0)
        r = ncclRecv(recv, static_cast<size_t>(recv_count), NcclType(dtype), from, comm_, s);
      const ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    });
  }

  // A one-word all-reduce on the barrier's own stream, waited for here. The
  // wait polls, so that the watchdog's abort (after the timeout) ends it
  // even if the aborted kernel never lets the stream finish.
  Result<std::unique_ptr<WindowMemory>> AllocateWindow(size_t bytes) override;
  // NcclWindow's destructor: deregisters (unless the communicator was aborted) and frees.
  void ReleaseWindow(void* data, ncclWindow_t window);

  Status Barrier() override {
    BM_TRY(Issue({"Barrier", 1, DType::kInt64}, barrier_stream_, [&](cudaStream_t s) {
      return ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt64, ncclSum, comm_, s);
    }));
    while (true) {
      const cudaError_t e = cudaStreamQuery(barrier_stream_);
      {
        std::lock_guard lock(mu_);
        if (!failed_.ok()) return failed_;
        if (e == cudaSuccess) return Status::Ok();
        if (e != cudaErrorNotReady) {
          AbortLocked(
              cuda::CudaError(e, "cudaStreamQuery", Describe({"Barrier", 1, DType::kInt64})));
          return failed_;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  struct Pending {
    cudaEvent_t done;
    Op op;
    Clock::time_point queued;
  };

  std::string Describe(const Op& op) const {
    std::string peer;
    if (op.peer >= 0) peer = fmt::format(" {} rank {}", op.name == "Recv" ? "from" : "to", op.peer);
    return fmt::format("nccl {} of {} {}{} in group '{}' (rank {} of {}; global ranks {})", op.name,
                       op.count, DTypeName(op.dtype), peer, group_, rank_, size(),
                       fmt::join(members_, ", "));
  }

  Status CheckPeer(std::string_view verb, int peer) const {
    if (peer < 0 || peer >= size() || peer == rank_)
      return Errorf(ErrorCode::kInvalidArgument, "nccl {} rank {} by rank {} of group '{}' of {}",
                    verb, peer, rank_, group_, size());
    return Status::Ok();
  }

  // Queues one NCCL call on `stream` and hands it to the watchdog. The lock
  // keeps the watchdog's abort from racing a call into NCCL.
  template <typename F>
  Status Issue(const Op& op, void* stream, F&& call) {
    if (op.count < 0)
      return Errorf(ErrorCode::kInvalidArgument, "{}: negative count", Describe(op));
    std::lock_guard lock(mu_);
    if (!failed_.ok()) return failed_;
    if (op.count == 0) return Status::Ok();  // every rank skips alike
    const auto s = static_cast<cudaStream_t>(stream);
    const ncclResult_t r = Settle(comm_, call(s), Clock::now() + timeout_);
    if (r == ncclInProgress) {
      AbortLocked(Errorf(ErrorCode::kUnavailable,
                         "{} was still being queued after {} s; the communicator was aborted",
                         Describe(op), timeout_s_));
      return failed_;
    }
    if (r != ncclSuccess) {
      AbortLocked(NcclError(r, op.name, Describe(op), comm_));
      return failed_;
    }
    cudaEvent_t done = nullptr;
    if (idle_events_.empty()) {
      cudaError_t e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
      if (e != cudaSuccess) return cuda::CudaError(e, "cudaEventCreateWithFlags", Describe(op));
    } else {
      done = idle_events_.back();
      idle_events_.pop_back();
    }
    if (cudaError_t e = cudaEventRecord(done, s); e != cudaSuccess) {
      idle_events_.push_back(done);
      return cuda::CudaError(e, "cudaEventRecord", Describe(op));
    }
    pending_.push_back({done, op, Clock::now()});
    if (pending_.size() == 1) wake_.notify_one();
    return Status::Ok();
  }

  // Records the first failure and aborts the communicator (once). mu_ held.
  void AbortLocked(Status why) {
    if (failed_.ok()) failed_ = std::move(why);
    if (!aborted_) {
      ncclCommAbort(comm_);
      aborted_ = true;
    }
  }

  // The watchdog: retires finished operations, and aborts on an operation
  // that outlasted the timeout or on an asynchronous NCCL error.
  void Watch() {
    cudaSetDevice(device_);
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (pending_.empty() || aborted_)
        wake_.wait(lock);
      else
        wake_.wait_for(lock, kWatchInterval);
      if (stop_ || aborted_) continue;
      while (!pending_.empty()) {
        const cudaError_t e = cudaEventQuery(pending_.front().done);
        if (e == cudaErrorNotReady) break;
        if (e != cudaSuccess) {
          AbortLocked(cuda::CudaError(e, "cudaEventQuery", Describe(pending_.front().op)));
          break;
        }
        idle_events_.push_back(pending_.front().done);
        pending_.pop_front();
      }
      if (aborted_ || pending_.empty()) continue;
      const Pending& oldest = pending_.front();
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
          async != ncclInProgress) {
        // Between operations an error is a peer (kPeerLost) or a link that failed.
        Status why = NcclError(async, "ncclCommGetAsyncError", Describe(oldest.op), comm_);
        AbortLocked(why.code() == ErrorCode::kPeerLost
                        ? why
                        : Status(ErrorCode::kUnavailable, why.message()));
      } else if (Clock::now() - oldest.queued > timeout_) {
        AbortLocked(Errorf(ErrorCode::kUnavailable,
                           "{} did not complete within {} s of being queued: a peer died or "
                           "stalled; the communicator was aborted",
                           Describe(oldest.op), timeout_s_));
      }
    }
  }

  ncclComm_t comm_;
  const std::string group_;
  const std::vector<int> members_;
  const int rank_;
  const int device_;
  const double timeout_s_;
  const std::chrono::milliseconds timeout_;

  std::mutex mu_;  // guards everything below, and every call into NCCL on comm_
  std::condition_variable wake_;
  std::deque<Pending> pending_;  // queued operations, oldest first
  std::vector<cudaEvent_t> idle_events_;
  Status failed_;  // the first failure; every later call returns it
  bool aborted_ = false;
  bool stop_ = false;
  std::thread watchdog_;
  cudaStream_t barrier_stream_ = nullptr;
  void* barrier_word_ = nullptr;
};

// ncclMemAlloc'd memory registered as a symmetric window of `owner`'s communicator.
class NcclWindow final : public WindowMemory {
 public:
  NcclWindow(NcclCommunicator* owner, void* data, size_t bytes, ncclWindow_t window)
      : owner_(owner), data_(data), bytes_(bytes), window_(window) {}
  ~NcclWindow() override { owner_->ReleaseWindow(data_, window_); }
  char* data() const override { return static_cast<char*>(data_); }
  size_t bytes() const override { return bytes_; }

 private:
  NcclCommunicator* owner_;
  void* data_;
  size_t bytes_;
  ncclWindow_t window_;  // null in a group of one, which NCCL registers nothing for
};

Result<std::unique_ptr<WindowMemory>> NcclCommunicator::AllocateWindow(size_t bytes) {
  const std::string what = fmt::format("a window of {} bytes in group '{}' (rank {} of {})", bytes,
                                       group_, rank_, size());
  std::lock_guard lock(mu_);
  if (!failed_.ok()) return failed_;
  BM_CUDA_CHECK(cudaSetDevice(device_), "{}", what);
  void* data = nullptr;
  BM_NCCL_CHECK(ncclMemAlloc(&data, bytes), comm_, what);
  ncclWindow_t window = nullptr;
  const ncclResult_t r =
      SettleAll(comm_, ncclCommWindowRegister(comm_, data, bytes, &window, NCCL_WIN_COLL_SYMMETRIC),
                Clock::now() + timeout_);
  if (r != ncclSuccess) {
    ncclMemFree(data);
    AbortLocked(r == ncclInProgress
                    ? Errorf(ErrorCode::kUnavailable,
                             "ncclCommWindowRegister: {} was not registered within {} s (a peer "
                             "did not ask for it); the communicator was aborted",
                             what, timeout_s_)
                    : NcclError(r, "ncclCommWindowRegister", what, comm_));
    return failed_;
  }
  return std::unique_ptr<WindowMemory>(new NcclWindow(this, data, bytes, window));
}

void NcclCommunicator::ReleaseWindow(void* data, ncclWindow_t window) {
  std::lock_guard lock(mu_);
  cudaSetDevice(device_);
  // After an abort NCCL holds no registration to undo (and its peers may be gone).
  if (window != nullptr && !aborted_) {
    const ncclResult_t r =
        SettleAll(comm_, ncclCommWindowDeregister(comm_, window), Clock::now() + timeout_);
    if (r != ncclSuccess)
      AbortLocked(r == ncclInProgress
                      ? Errorf(ErrorCode::kUnavailable,
                               "ncclCommWindowDeregister in group '{}' did not finish within {} s",
                               group_, timeout_s_)
                      : NcclError(r, "ncclCommWindowDeregister", group_, comm_));
  }
  ncclMemFree(data);
}

}  // namespace

Result<std::string> NewNcclUniqueId() {
  SetNcclDefaults();
  ncclUniqueId id;
  BM_NCCL_CHECK(ncclGetUniqueId(&id), nullptr, "a new communicator id");
  return std::string(id.internal, sizeof id.internal);
}

Result<std::unique_ptr<Communicator>> ConnectNcclCommunicator(std::string_view unique_id,
                                                              const std::string& group, int rank,
                                                              std::span<const int> members,
                                                              int device, double timeout_s) {
  SetNcclDefaults();
  const int size = static_cast<int>(members.size());
  const std::string what = fmt::format("group '{}' (rank {} of {}; global ranks {}) on device {}",
                                       group, rank, size, fmt::join(members, ", "), device);
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal)
    return Errorf(ErrorCode::kInvalidArgument, "an NCCL id of {} bytes (not {}) for {}",
                  unique_id.size(), sizeof id.internal, what);
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  BM_CUDA_CHECK(cudaSetDevice(device), "{}", what);

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a member that never comes cannot hang this one
  ncclComm_t comm = nullptr;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (comm != nullptr) r = Settle(comm, r, deadline);
  if (r != ncclSuccess) {
    Status status = r == ncclInProgress
                        ? Errorf(ErrorCode::kUnavailable,
                                 "ncclCommInitRankConfig: not every member of {} connected "
                                 "within {} s",
                                 what, timeout_s)
                        : NcclError(r, "ncclCommInitRankConfig", what, comm);
    if (comm != nullptr) ncclCommAbort(comm);
    return status;
  }
  auto communicator = std::make_unique<NcclCommunicator>(
      comm, group, std::vector<int>(members.begin(), members.end()), rank, device, timeout_s);
  BM_TRY(communicator->Start());
  return std::unique_ptr<Communicator>(std::move(communicator));
}

}  // namespace bm::train::dist
