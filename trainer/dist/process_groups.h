// ProcessGroups: the communicators of one rank in a `TPxPPyDPz` layout.
//
// Rank order is Megatron's: tensor parallel innermost, then data parallel,
// then pipeline parallel outermost:
//     rank = tp + TP * (dp + DP * pp)
// so the TP group of a rank is TP consecutive ranks (one machine's NVLink
// domain), its DP group the ranks with the same (tp, pp), its PP group those
// with the same (tp, dp). world spans every rank.
//
// Connecting is collective: every rank of the world calls
// ConnectProcessGroups with the same layout; they meet through the file store
// in RankEnv::rendezvous (trainer/dist/rendezvous.h; NCCL's unique ids are
// exchanged through it too) and fail with kUnavailable naming the ranks that
// did not arrive within RankEnv::timeout_s. Every rank connects its groups in
// one order (world, tp, pp, dp), each over its own key prefix: "world",
// "tp.pp<p>.dp<d>", "pp.tp<t>.dp<d>", "dp.tp<t>.pp<p>".
//
// A group of one rank needs no rendezvous: over Gloo it is the self
// communicator (host buffers, copies), over NCCL a one-rank NCCL communicator
// (device buffers, queued on the stream like any other). Staged Gloo is Gloo
// for device buffers (trainer/dist/staged_communicator.h); its group of one is
// the self communicator too.
#pragma once

#include <memory>
#include <string_view>

#include "base/result.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/rank_env.h"

namespace bm::train::dist {

struct Coords {
  int tp = 0, pp = 0, dp = 0;
};
// Precondition: 0 <= rank < tp*pp*dp.
Coords CoordsOf(int rank, int tp, int pp, int dp);
int RankOf(Coords c, int tp, int pp, int dp);

enum class Transport {
  kGloo,  // host buffers, TCP (the CPU backend)
  kNccl,  // device buffers (the CUDA backend); kUnsupported in a build without NCCL
  // device buffers through pinned host memory over Gloo (the CUDA backend with
  // communicator = "gloo": no NCCL, ranks may share a GPU); kUnsupported without CUDA
  kStagedGloo,
};
std::string_view TransportName(Transport t);
// The transport of a backend's buffers: "cpu" → kGloo, "cuda" → kNccl, so
// that the trainer names its device and never a library.
Result<Transport> TransportForDevice(std::string_view device);

struct ProcessGroups {
  Coords coords;
  // The groups' communicators, of `transport` (NCCL: device buffers).
  std::unique_ptr<Communicator> world, tp, pp, dp;
  // A host communicator over the whole world (Gloo, or self for one rank) for
  // the training loop's own small reductions — token counts, losses, memory
  // maxima, barriers around checkpoints — whatever the backend's transport.
  std::unique_ptr<Communicator> control;
};

// A world of one rank gets self communicators (no rendezvous; host buffers)
// unless force_transport: then one-rank communicators of `transport` (a
// one-rank NCCL run must equal the run without one, bit for bit; over Gloo
// they are self communicators all the same). `device` is the CUDA device the
// NCCL communicators bind to (ignored by Gloo).
// kInvalidArgument when tp*pp*dp != env.world_size; kUnsupported for NCCL in
// a build without it; kUnavailable for a rank that does not arrive or a
// connection that fails; errors name the rank and the group.
Result<ProcessGroups> ConnectProcessGroups(const RankEnv& env, int tp, int pp, int dp,
                                           Transport transport, int device = 0,
                                           bool force_transport = false);

}  // namespace bm::train::dist
