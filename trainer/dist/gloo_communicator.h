// Gloo: collectives between the host buffers of CPU ranks, over TCP between
// processes (the library PyTorch's CPU backend uses; Debian's libgloo-dev).
// Why Gloo and not MPI: docs/ARCHITECTURE.md, "Several ranks".
//
// Each process group is one Gloo context: a full mesh of TCP connections made
// through the rendezvous (trainer/dist/rendezvous.h) under the group's prefix.
// The operations are Gloo's, on fp32, int64, fp16 (gloo::float16) and bf16
// (a sum and max of our own, rounding to nearest even after each addition):
//   AllReduce      gloo::allreduce, the ring: each element is reduced once, by
//                  one rank, in ring order, and copied to the others, so every
//                  rank ends with the same bits.
//   ReduceScatter  the same all-reduce into a scratch buffer, then this rank's
//                  block copied out. Gloo's own reduce-scatter (the halving-
//                  doubling algorithm of 2017) is int-counted, rewrites its
//                  input and reduces in another order; through the all-reduce,
//                  a ReduceScatter block equals the AllReduce of the same data
//                  bit for bit, so ZeRO-2 and plain data parallel agree exactly
//                  on the CPU. It moves twice the bytes, which the CPU backend
//                  (a correctness oracle) can afford.
//   AllGather      gloo::allgather (ring); in place when send is recv's own block.
//   Broadcast      gloo::broadcast.
//   Send / Recv    unbound buffers; the k-th Send to a peer matches that peer's
//                  k-th Recv from this rank (the slot carries the count). Send
//                  may wait for the matching Recv to be posted.
//   Barrier        gloo::barrier.
// A count of 0 returns at once on every rank, without communicating.
//
// Failure: a peer whose connection was closed or reset (it exited, crashed or
// was killed; Gloo's "Connection closed by peer", "Connection reset by peer",
// a broken pipe) gives kPeerLost, and an operation that outlasts the timeout
// kUnavailable, each naming the operation, the count, the dtype and the group;
// the communicator then refuses every later call with the same status (Gloo's
// state after a failure is unknown; the run stops). A peer that goes away while
// the group connects is kPeerLost too. Connecting ignores SIGPIPE for the whole process, so that a
// write to a dead peer fails with EPIPE instead of killing this rank.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/rank_env.h"
#include "trainer/dist/rendezvous.h"

namespace gloo::transport {
class Device;
}

namespace bm::train::dist {

inline constexpr const char* kEnvGlooIfname = "BENCHMAKE_GLOO_IFNAME";
inline constexpr const char* kEnvGlooHostname = "BENCHMAKE_GLOO_HOSTNAME";

// The address this rank listens on; exactly one of the two is set.
struct GlooAddress {
  std::string iface;     // a network interface, e.g. "eth0"
  std::string hostname;  // a name or address to resolve, e.g. "127.0.0.1"
};
// BENCHMAKE_GLOO_IFNAME when set, else BENCHMAKE_GLOO_HOSTNAME, else loopback
// when every rank runs on this machine (env.local_world_size ==
// env.world_size), else this machine's hostname, which must resolve to an
// address the other machines reach (as torchrun's default does).
Result<GlooAddress> ChooseGlooAddress(const RankEnv& env,
                                      const std::map<std::string, std::string>& vars);

// One TCP device (a listening address and an event-loop thread) shared by
// every group a rank connects.
class GlooNetwork {
 public:
  // kInvalidArgument naming the interface or host when Gloo cannot use it.
  static Result<std::unique_ptr<GlooNetwork>> Open(const GlooAddress& address);
  ~GlooNetwork();

  // Collective over the members of `group` (members[i] is the global rank of
  // group rank i; me indexes members; members.size() >= 2): Gloo connects
  // the full mesh through the rendezvous, under the prefix `group`.
  // kUnavailable when that fails or outlasts the rendezvous's timeout
  // (ConnectProcessGroups checks first that every member arrived, to name
  // the missing ones).
  Result<std::unique_ptr<Communicator>> Connect(Rendezvous& rendezvous, const std::string& group,
                                                int me, std::span<const int> members);

 private:
  explicit GlooNetwork(std::shared_ptr<gloo::transport::Device> device);
  std::shared_ptr<gloo::transport::Device> device_;
};

}  // namespace bm::train::dist
