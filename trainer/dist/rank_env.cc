#include "trainer/dist/rank_env.h"

#include <charconv>
#include <cstdlib>

extern char** environ;

namespace bm::train::dist {
namespace {

using Vars = std::map<std::string, std::string>;

// The first of `names` that is set, or nullptr.
const std::string* Lookup(const Vars& vars, std::initializer_list<const char*> names,
                          const char** found) {
  for (const char* name : names) {
    auto it = vars.find(name);
    if (it != vars.end() && !it->second.empty()) {
      *found = name;
      return &it->second;
    }
  }
  return nullptr;
}

Status ReadInt(const Vars& vars, std::initializer_list<const char*> names, int* out) {
  const char* name = nullptr;
  const std::string* text = Lookup(vars, names, &name);
  if (!text) return Status::Ok();
  int value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < 0)
    return Errorf(ErrorCode::kInvalidArgument, "{}={} is not a non-negative integer", name, *text);
  *out = value;
  return Status::Ok();
}

}  // namespace

Result<RankEnv> ReadRankEnv(const Vars& vars) {
  // The first launcher whose rank variable is set decides, torchrun's names
  // first (a launcher that sets RANK decides, whatever started it), then
  // OpenMPI's, then Slurm's: mpirun's ranks inside a Slurm job (a batch
  // script) inherit the job's SLURM_PROCID and SLURM_NTASKS, while srun never
  // sets OMPI_COMM_WORLD_*. Each is read by its own names only.
  struct Names {
    const char *rank, *world_size, *local_rank, *local_world_size;
  };
  static constexpr Names kLaunchers[] = {
      {kEnvRank, kEnvWorldSize, kEnvLocalRank, kEnvLocalWorldSize},
      {kOpenMpiRankVars[0], kOpenMpiRankVars[1], kOpenMpiRankVars[2], kOpenMpiRankVars[3]},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}};
  RankEnv env;
  const char* unused = nullptr;
  for (const Names& n : kLaunchers) {
    if (!Lookup(vars, {n.rank}, &unused)) continue;
    BM_TRY(ReadInt(vars, {n.rank}, &env.rank));
    BM_TRY(ReadInt(vars, {n.world_size}, &env.world_size));
    BM_TRY(ReadInt(vars, {n.local_rank}, &env.local_rank));
    env.local_world_size = env.world_size;
    BM_TRY(ReadInt(vars, {n.local_world_size}, &env.local_world_size));
    break;
  }
  if (env.world_size < 1)
    return Errorf(ErrorCode::kInvalidArgument, "{} must be >= 1", kEnvWorldSize);
  if (env.rank >= env.world_size)
    return Errorf(ErrorCode::kInvalidArgument, "rank {} is outside a world of {} ranks", env.rank,
                  env.world_size);
  if (env.local_rank >= env.local_world_size || env.local_world_size > env.world_size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "local rank {} of {} local ranks does not fit a world of {}", env.local_rank,
                  env.local_world_size, env.world_size);
  if (auto it = vars.find(kEnvRendezvous); it != vars.end()) env.rendezvous = it->second;
  if (env.world_size > 1 && env.rendezvous.empty())
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} ranks but no {}: set it to a directory every rank can write", env.world_size,
                  kEnvRendezvous);
  if (auto it = vars.find(kEnvTimeout); it != vars.end() && !it->second.empty()) {
    char* end = nullptr;
    env.timeout_s = std::strtod(it->second.c_str(), &end);
    if (*end != '\0' || !(env.timeout_s > 0))
      return Errorf(ErrorCode::kInvalidArgument, "{}={} is not a positive number of seconds",
                    kEnvTimeout, it->second);
  }
  return env;
}

Result<RankEnv> ReadRankEnvFromProcess() {
  Vars vars;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos)
      vars.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return ReadRankEnv(vars);
}

std::map<std::string, std::string> RankEnvVars(const RankEnv& env) {
  Vars vars = {{kEnvRank, std::to_string(env.rank)},
               {kEnvWorldSize, std::to_string(env.world_size)},
               {kEnvLocalRank, std::to_string(env.local_rank)},
               {kEnvLocalWorldSize, std::to_string(env.local_world_size)},
               {kEnvTimeout, fmt::format("{}", env.timeout_s)}};
  if (!env.rendezvous.empty()) vars[kEnvRendezvous] = env.rendezvous;
  return vars;
}

}  // namespace bm::train::dist
