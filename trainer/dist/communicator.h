// Communicator: the collectives that training over several ranks needs, one
// interface for every transport. The CPU backend gets a Gloo communicator
// (host buffers, TCP between processes), the CUDA backend an NCCL one (device
// buffers, ordered on a CUDA stream); a world of one rank gets SelfCommunicator.
// Model and backend code call this interface only and never name the
// transport (docs/ARCHITECTURE.md, "Several ranks").
//
// A communicator spans one process group (all ranks, or the DP, TP or PP group
// of a layout: trainer/dist/process_groups.h). rank() is the rank inside that
// group, 0 <= rank() < size().
//
// Buffers: host memory for host communicators (Gloo, Self), device memory for
// device communicators (NCCL); device() says which. `stream` orders a device
// communicator's operation after the work already queued on that CUDA stream
// (a cudaStream_t; nullptr = the legacy default stream); the call returns once
// the operation is queued, and later work on the same stream sees its result.
// Host communicators ignore `stream` and return when the operation is done.
//
// Semantics (every rank of the group must make the same calls in the same
// order with the same counts and dtypes):
//   AllReduce(data, n)          data[i] = op over ranks of data[i]       (in place)
//   ReduceScatter(send, recv, n) recv[i] = op over ranks r of send_r[rank()*n + i];
//                               send holds size()*n elements, recv n (recv may be
//                               the rank's own block of send: recv == send + rank()*n)
//   AllGather(send, recv, n)    recv[r*n + i] = send_r[i]; recv holds size()*n (recv may
//                               alias the rank's own slot: send == recv + rank()*n)
//   Broadcast(data, n, root)    data = data_root
//   Send / Recv                 point to point, matched in order per peer pair; a Send
//                               may wait for the peer's matching Recv, so two ranks
//                               must not both Send to each other first
//   SendRecv(send, to, recv, from)  a Send to `to` and a Recv from `from` at once,
//                               neither waiting for the other (each is matched as a
//                               Send and a Recv would be), so two ranks may SendRecv to
//                               each other (a pipeline's exchange of an activation for
//                               a gradient: Megatron's send_forward_recv_backward)
//   Barrier()                   returns when every rank has entered it
// A count of 0 returns at once on every rank, without communicating; a
// negative count, a root or peer outside the group, or a Send/Recv to
// oneself is kInvalidArgument.
// Every rank ends an AllReduce with the same bits (the reduction order is the
// library's, fixed for a given size and count). A reduction in kBf16/kFp16
// accumulates in that type as the library does (NCCL, Gloo); the trainer
// reduces gradients in the precision the run config names.
//
// Errors: a Status naming the operation, the count and the peer or group,
// never an exception or exit. A peer that went away (its connection reset or
// closed, NCCL's remote error) is kPeerLost: the failure is that peer's, and
// benchmake-train then exits with trainer/dist/exit_status.h's status. A
// collective that outlasts the timeout (RankEnv::timeout_s) is kUnavailable.
// Either way the caller stops the run (after a failure a communicator returns
// that failure from every call).
// Thread safety: one thread at a time per communicator (a backend may issue
// from a communication thread of its own, never from two at once).
//
// Windows: AllocateWindow(bytes) gives device memory that the group's collectives know
// beforehand (NCCL: ncclMemAlloc registered with ncclCommWindowRegister as a symmetric window),
// so that NCCL may run collectives whose buffers lie in it, at the same offset on every rank,
// with its symmetric kernels or, at NCCL_CTA_POLICY=2, its all-gathers on the copy engines and
// no SM at all. Collective: every rank of the group asks for the same bytes, in the same order as
// its other calls. The memory is released (deregistered first) when the WindowMemory is
// destroyed, which must happen before the communicator is, on every rank. Transports without
// windows (self, gloo) return kUnsupported.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "base/result.h"

namespace bm::train::dist {

enum class DType { kFloat32, kBFloat16, kFloat16, kFloat64, kInt64 };
size_t DTypeSize(DType dtype);
std::string_view DTypeName(DType dtype);  // "fp32" | "bf16" | "fp16" | "fp64" | "int64"

enum class ReduceOp { kSum, kMax };

// Device memory registered with a group (Communicator::AllocateWindow); destroying it
// deregisters and frees it.
class WindowMemory {
 public:
  virtual ~WindowMemory() = default;
  virtual char* data() const = 0;
  virtual size_t bytes() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view transport() const = 0;  // "self" | "gloo" | "nccl"
  virtual bool device() const = 0;                 // true: buffers are device memory

  virtual Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op,
                           void* stream = nullptr) = 0;
  virtual Status ReduceScatter(const void* send, void* recv, int64_t count, DType dtype,
                               ReduceOp op, void* stream = nullptr) = 0;
  virtual Status AllGather(const void* send, void* recv, int64_t count, DType dtype,
                           void* stream = nullptr) = 0;
  virtual Status Broadcast(void* data, int64_t count, DType dtype, int root,
                           void* stream = nullptr) = 0;
  virtual Status Send(const void* data, int64_t count, DType dtype, int peer,
                      void* stream = nullptr) = 0;
  virtual Status Recv(void* data, int64_t count, DType dtype, int peer, void* stream = nullptr) = 0;
  virtual Status SendRecv(const void* send, int64_t send_count, int to, void* recv,
                          int64_t recv_count, int from, DType dtype, void* stream = nullptr) = 0;
  virtual Status Barrier() = 0;
  // See "Windows" above; kUnsupported here.
  virtual Result<std::unique_ptr<WindowMemory>> AllocateWindow(size_t bytes);
};

// The communicator of a world (or group) of one host rank: every collective is
// the identity (a copy where send and recv differ); point to point is an error. The
// CUDA backend with one rank uses NCCL's one-rank communicator instead.
std::unique_ptr<Communicator> MakeSelfCommunicator();

}  // namespace bm::train::dist
