#include "trainer/dist/process_groups.h"

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "trainer/dist/gloo_communicator.h"
#include "trainer/dist/rendezvous.h"
#if BENCHMAKE_HAVE_NCCL
#include "trainer/dist/nccl_communicator.h"
#endif
#if BENCHMAKE_HAVE_CUDA_STAGING
#include "trainer/dist/staged_communicator.h"
#endif

namespace bm::train::dist {

Coords CoordsOf(int rank, int tp, int pp, int dp) {
  (void)pp;
  return Coords{.tp = rank % tp, .pp = rank / (tp * dp), .dp = (rank / tp) % dp};
}

int RankOf(Coords c, int tp, int pp, int dp) {
  (void)pp;
  return c.tp + tp * (c.dp + dp * c.pp);
}

std::string_view TransportName(Transport t) {
  switch (t) {
    case Transport::kGloo:
      return "gloo";
    case Transport::kNccl:
      return "nccl";
    case Transport::kStagedGloo:
      return "gloo (staged through host memory)";
  }
  return "?";
}

Result<Transport> TransportForDevice(std::string_view device) {
  if (device == "cpu") return Transport::kGloo;
  if (device == "cuda") return Transport::kNccl;
  return Errorf(ErrorCode::kInvalidArgument, "no collective transport for device '{}'", device);
}

namespace {

// One process group of this rank: its name (the prefix of its keys in the
// rendezvous), the global ranks of its members in group-rank order, and this
// rank's place among them.
struct Group {
  std::string name;
  std::vector<int> members;
  int me = 0;
};

// world, tp, pp, dp: the order every rank connects them in, so that no two
// ranks wait on each other in different groups.
std::vector<Group> GroupsOf(Coords c, int tp, int pp, int dp) {
  Group world{"world", {}, RankOf(c, tp, pp, dp)};
  for (int r = 0; r < tp * pp * dp; ++r) world.members.push_back(r);
  Group tp_group{fmt::format("tp.pp{}.dp{}", c.pp, c.dp), {}, c.tp};
  for (int t = 0; t < tp; ++t) tp_group.members.push_back(RankOf({t, c.pp, c.dp}, tp, pp, dp));
  Group pp_group{fmt::format("pp.tp{}.dp{}", c.tp, c.dp), {}, c.pp};
  for (int p = 0; p < pp; ++p) pp_group.members.push_back(RankOf({c.tp, p, c.dp}, tp, pp, dp));
  Group dp_group{fmt::format("dp.tp{}.pp{}", c.tp, c.pp), {}, c.dp};
  for (int d = 0; d < dp; ++d) dp_group.members.push_back(RankOf({c.tp, c.pp, d}, tp, pp, dp));
  return {world, tp_group, pp_group, dp_group};
}

// Connects the groups of one rank over one transport.
class Connector {
 public:
  Connector(const RankEnv& env, Transport transport, int device)
      : env_(env), transport_(transport), device_(device) {}

  Result<std::unique_ptr<Communicator>> Connect(const Group& g) {
    if (transport_ == Transport::kNccl) return ConnectNccl(g);
    BM_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, ConnectGloo(g));
    if (transport_ == Transport::kGloo || g.members.size() == 1) return c;
#if BENCHMAKE_HAVE_CUDA_STAGING
    return MakeStagedCommunicator(std::move(c));
#else
    return Errorf(ErrorCode::kUnsupported,
                  "gloo between device buffers: this benchmake-train was built without CUDA");
#endif
  }

  Result<std::unique_ptr<Communicator>> ConnectGloo(const Group& g) {
    // Gloo's algorithms need a peer; alone, the self communicator is the same.
    if (g.members.size() == 1) return MakeSelfCommunicator();
    BM_TRY(Meet(g));
    if (!network_) {
      std::map<std::string, std::string> vars;
      for (const char* name : {kEnvGlooIfname, kEnvGlooHostname})
        if (const char* value = std::getenv(name)) vars[name] = value;
      BM_ASSIGN_OR_RETURN(GlooAddress address, ChooseGlooAddress(env_, vars));
      BM_ASSIGN_OR_RETURN(network_, GlooNetwork::Open(address));
    }
    return network_->Connect(*rendezvous_, g.name, g.me, g.members);
  }

  Result<std::unique_ptr<Communicator>> ConnectNccl(const Group& g) {
#if BENCHMAKE_HAVE_NCCL
    // Member 0 makes the group's id and hands it to the others; a group of
    // one needs no rendezvous.
    const bool alone = g.members.size() == 1;
    if (!alone) BM_TRY(Meet(g));
    std::string id;
    const std::string key = g.name + "/nccl-id";
    if (g.me == 0) {
      BM_ASSIGN_OR_RETURN(id, NewNcclUniqueId());
      if (!alone) BM_TRY(rendezvous_->Set(key, id));
    } else {
      BM_ASSIGN_OR_RETURN(id, rendezvous_->Get(key));
    }
    return ConnectNcclCommunicator(id, g.name, g.me, g.members, device_, env_.timeout_s);
#else
    (void)g;
    return Errorf(ErrorCode::kUnsupported,
                  "the nccl transport: this benchmake-train was built without NCCL");
#endif
  }

 private:
  // Every member of the group announces itself and waits for the others.
  Status Meet(const Group& g) {
    BM_TRY(OpenRendezvous());
    return rendezvous_->Arrive(g.name, g.me, g.members);
  }

  Status OpenRendezvous() {
    if (rendezvous_) return Status::Ok();
    if (env_.rendezvous.empty())
      return Errorf(ErrorCode::kInvalidArgument, "{} ranks but no {}", env_.world_size,
                    kEnvRendezvous);
    BM_ASSIGN_OR_RETURN(rendezvous_, Rendezvous::Open(env_.rendezvous, env_.timeout_s));
    return Status::Ok();
  }

  const RankEnv& env_;
  const Transport transport_;
  const int device_;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::unique_ptr<GlooNetwork> network_;
};

}  // namespace

Result<ProcessGroups> ConnectProcessGroups(const RankEnv& env, int tp, int pp, int dp,
                                           Transport transport, int device, bool force_transport) {
  if (tp < 1 || pp < 1 || dp < 1 || tp * pp * dp != env.world_size)
    return Errorf(ErrorCode::kInvalidArgument, "layout TP{}xPP{}xDP{} does not fit {} ranks ({})",
                  tp, pp, dp, env.world_size, kEnvWorldSize);
  ProcessGroups groups;
  groups.coords = CoordsOf(env.rank, tp, pp, dp);
  if (env.world_size == 1 && !force_transport) {
    groups.world = MakeSelfCommunicator();
    groups.tp = MakeSelfCommunicator();
    groups.pp = MakeSelfCommunicator();
    groups.dp = MakeSelfCommunicator();
    groups.control = MakeSelfCommunicator();
    return groups;
  }
  Connector connector(env, transport, device);
  std::vector<Group> specs = GroupsOf(groups.coords, tp, pp, dp);
  std::unique_ptr<Communicator>* slots[] = {&groups.world, &groups.tp, &groups.pp, &groups.dp};
  for (size_t i = 0; i < specs.size(); ++i) {
    Result<std::unique_ptr<Communicator>> c = connector.Connect(specs[i]);
    if (!c.ok())
      return c.status().WithContext(fmt::format("rank {} connecting its {} group over {}", env.rank,
                                                specs[i].name, TransportName(transport)));
    *slots[i] = std::move(*c);
  }
  // The control group: the whole world again, over Gloo whatever the transport.
  Group control = specs[0];
  control.name = "control";
  Result<std::unique_ptr<Communicator>> c = connector.ConnectGloo(control);
  if (!c.ok())
    return c.status().WithContext(
        fmt::format("rank {} connecting its control group over gloo", env.rank));
  groups.control = std::move(*c);
  // A rank leaves only once every rank holds every connection: one that
  // returned at once and failed (a refused layout, say) would otherwise close
  // its sockets under peers still finishing their handshakes with it, and they
  // would report a broken connection instead of the error that stopped it.
  if (Status s = groups.control->Barrier(); !s.ok())
    return s.WithContext(fmt::format("rank {} waiting for every rank to connect", env.rank));
  return groups;
}

}  // namespace bm::train::dist
