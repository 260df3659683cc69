// NCCL: collectives between the device buffers of CUDA ranks, one GPU per
// process. Built only with NCCL (BENCHMAKE_HAVE_NCCL, library bm_train_nccl);
// process_groups.cc is its only caller.
//
// Every operation is queued on the caller's stream (a cudaStream_t; nullptr =
// the legacy default stream) and returns once queued: ncclAllReduce,
// ncclReduceScatter, ncclAllGather (in place when send is recv's own block),
// ncclBroadcast, ncclSend / ncclRecv (matched in order per peer pair, as NCCL
// does), on fp32, bf16, fp16 and int64. Barrier is a one-element all-reduce
// on a stream of the communicator's own, waited for on the host.
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0), so no NCCL
// call can hang the calling thread: a call still in progress is polled with
// ncclCommGetAsyncError up to the timeout. A watchdog thread follows each
// queued operation through a CUDA event recorded after it: an operation not
// done `timeout_s` after it was queued (a peer died or stalled), or an
// asynchronous NCCL error (a peer's connection broke), aborts the
// communicator with ncclCommAbort, which also releases kernels still waiting
// for that peer; from then on every call returns that failure naming the
// operation: kPeerLost for NCCL's remote error (a peer that went away), else
// kUnavailable. The timeout counts from the moment an operation is
// queued, so it must exceed the longest stretch of work queued ahead of a
// collective on its stream (a step's backward pass): RankEnv::timeout_s,
// default 300 s.
//
// AllocateWindow: ncclMemAlloc'd memory registered with ncclCommWindowRegister
// (NCCL_WIN_COLL_SYMMETRIC), the communicator polled until the registration has
// finished in NCCL's background; the WindowMemory's destructor deregisters it (not
// after an abort) and frees it. A group of one gets memory and no registration.
//
// Every NCCL and CUDA call is checked into a Status naming the call, the
// operation, its count and dtype, and the group.
//
// Environment: NCCL_NVLS_ENABLE=0 is set when unset, before NCCL initializes.
// NVLink SHARP (NVLS) uses NVLink multicast objects, and on the shared
// multi-GPU machines this project runs on a program that uses them can put
// the host's GPUs out of service for a long time; without NVLS, NCCL uses its
// ring and tree algorithms. A user who owns the machine may set
// NCCL_NVLS_ENABLE=1.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "trainer/dist/communicator.h"

namespace bm::train::dist {

// A fresh ncclUniqueId as bytes: member 0 of a group makes it and the others
// read it from the rendezvous.
Result<std::string> NewNcclUniqueId();

// Member `rank` of a group of `size` on CUDA device `device` (an index after
// CUDA_VISIBLE_DEVICES). Collective: returns when every member has connected
// with the same id, or kUnavailable after `timeout_s`. `group` and `members`
// (the global ranks, for messages) name the group in errors.
Result<std::unique_ptr<Communicator>> ConnectNcclCommunicator(std::string_view unique_id,
                                                              const std::string& group, int rank,
                                                              std::span<const int> members,
                                                              int device, double timeout_s);

}  // namespace bm::train::dist
