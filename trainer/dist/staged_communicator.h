// A device communicator over a host one: each collective copies the device
// buffers it reads into pinned host memory (after the caller's stream has
// produced them), runs the host communicator's collective (Gloo), and copies
// the result back before it returns — what PyTorch's Gloo backend does with
// CUDA tensors. It is slower than NCCL by the copies and by waiting on the
// stream, but it needs no NCCL and lets several ranks share one GPU (NCCL
// refuses two ranks of a communicator on one device): `communicator = "gloo"`
// on device cuda, and the multi-rank CUDA tests on a machine of one GPU.
//
// Semantics are the host communicator's (trainer/dist/communicator.h) on
// device buffers: device() is true, every call returns with the operation
// done, `stream` is the stream the buffers belong to. Errors: the host
// communicator's, or a failed CUDA copy naming the operation and its bytes.
// Built with CUDA only (BENCHMAKE_HAVE_CUDA_STAGING, library bm_train_staged).
#pragma once

#include <memory>

#include "trainer/dist/communicator.h"

namespace bm::train::dist {

std::unique_ptr<Communicator> MakeStagedCommunicator(std::unique_ptr<Communicator> host);

}  // namespace bm::train::dist
