// RankEnv: what a launcher tells each rank of a multi-process run, read from
// the environment, like torchrun's. The launchers (rules/launch/, local
// processes; Slurm's srun; OpenMPI's mpirun) set it; benchmake-train reads it
// before anything else.
//
//   variable                   meaning                                   default
//   RANK                       global rank, 0 <= RANK < WORLD_SIZE        0
//   WORLD_SIZE                 number of ranks (= TP*PP*DP of the layout) 1
//   LOCAL_RANK                 rank among this machine's ranks; the GPU
//                              it drives (index into CUDA_VISIBLE_DEVICES) 0
//   LOCAL_WORLD_SIZE           ranks on this machine                      WORLD_SIZE
//   BENCHMAKE_RENDEZVOUS       a directory every rank can read and write
//                              (the step's scratch dir on one machine, a
//                              shared filesystem across machines): the
//                              file store the ranks meet through        required if WORLD_SIZE > 1
//   BENCHMAKE_COLLECTIVE_TIMEOUT  seconds a rendezvous or collective may
//                              wait for a peer before failing            300
// When RANK is unset, OpenMPI's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK /
// _LOCAL_SIZE are read instead, and when those are unset too, Slurm's
// SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_NTASKS_PER_NODE, so
// mpirun and srun start ranks with no wrapper (OpenMPI's before Slurm's: the
// ranks of an mpirun inside a Slurm job inherit the job's SLURM_PROCID). The
// four come from one launcher's names, never mixed.
//
// Only rank 0 writes the run's outputs (out_dir: model, metrics.json,
// log.jsonl); every rank writes its own resume shard under resume_dir.
#pragma once

#include <map>
#include <string>

#include "base/result.h"

namespace bm::train::dist {

inline constexpr const char* kEnvRank = "RANK";
inline constexpr const char* kEnvWorldSize = "WORLD_SIZE";
inline constexpr const char* kEnvLocalRank = "LOCAL_RANK";
inline constexpr const char* kEnvLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kEnvRendezvous = "BENCHMAKE_RENDEZVOUS";
inline constexpr const char* kEnvTimeout = "BENCHMAKE_COLLECTIVE_TIMEOUT";
// OpenMPI's names of rank, world size, local rank, local world size.
inline constexpr const char* kOpenMpiRankVars[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                                   "OMPI_COMM_WORLD_LOCAL_RANK",
                                                   "OMPI_COMM_WORLD_LOCAL_SIZE"};

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string rendezvous;  // directory of the file store; "" for a world of one
  double timeout_s = 300;
};

// From a variable map (tests) or the process environment. kInvalidArgument
// naming the variable for a non-number, rank outside [0, world), or a world > 1
// without BENCHMAKE_RENDEZVOUS.
Result<RankEnv> ReadRankEnv(const std::map<std::string, std::string>& vars);
Result<RankEnv> ReadRankEnvFromProcess();

// The variables a launcher sets for one rank (the inverse of ReadRankEnv).
std::map<std::string, std::string> RankEnvVars(const RankEnv& env);

}  // namespace bm::train::dist
