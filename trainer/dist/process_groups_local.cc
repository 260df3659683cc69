// TEMPORARY (branch dp): a world of one rank only, until the Gloo/NCCL
// implementation (branch comm) lands and replaces this file.
#include "trainer/dist/process_groups.h"

namespace bm::train::dist {

Coords CoordsOf(int rank, int tp, int /*pp*/, int dp) {
  return {rank % tp, rank / (tp * dp), (rank / tp) % dp};
}

int RankOf(Coords c, int tp, int /*pp*/, int dp) { return c.tp + tp * (c.dp + dp * c.pp); }

std::string_view TransportName(Transport t) { return t == Transport::kGloo ? "gloo" : "nccl"; }

Result<ProcessGroups> ConnectProcessGroups(const RankEnv& env, int tp, int pp, int dp,
                                           Transport transport, int, bool) {
  if (tp * pp * dp != env.world_size)
    return Errorf(ErrorCode::kInvalidArgument, "layout of {} ranks in a world of {}", tp * pp * dp,
                  env.world_size);
  if (env.world_size != 1)
    return Errorf(ErrorCode::kUnsupported, "{} ranks: no {} transport in this build",
                  env.world_size, TransportName(transport));
  ProcessGroups g;
  g.world = MakeSelfCommunicator();
  g.tp = MakeSelfCommunicator();
  g.pp = MakeSelfCommunicator();
  g.dp = MakeSelfCommunicator();
  g.control = MakeSelfCommunicator();
  return g;
}

}  // namespace bm::train::dist
