// benchmake-train: the trainer the pretrain / finetune / evaluate steps run.
//
//   benchmake-train --config RUN.json     run (trainer/run/run_config.h), writes
//                                         metrics.json, log.jsonl, the checkpoint
//   benchmake-train --probe               platform facts as JSON (docs/METRICS.md)
//   benchmake-train --presets             model presets with parameter counts
//   benchmake-train --version
//
// Exit codes: 0 success, 2 bad configuration, 75 a rank of several that
// failed only because another rank was lost (trainer/dist/exit_status.h), 1
// any other failure.
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "trainer/dist/exit_status.h"
#include "trainer/dist/heartbeat.h"
#include "trainer/dist/rank_env.h"
#include "trainer/model/config.h"
#include "trainer/platform.h"
#include "trainer/process_env.h"
#include "trainer/run/evaluate.h"
#include "trainer/run/run_config.h"
#include "trainer/run/train_loop.h"

namespace {

bm::Result<nlohmann::json> Run(const std::string& path) {
  std::ifstream in(path);
  if (!in) return bm::Errorf(bm::ErrorCode::kNotFound, "cannot open run config {}", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded())
    return bm::Errorf(bm::ErrorCode::kInvalidArgument, "{} is not valid JSON", path);
  bm::Result<bm::train::RunConfig> run = bm::train::ParseRunConfig(j);
  if (!run.ok()) return run.status().WithContext(path);
  if (!run->progress) run.value().progress = isatty(STDERR_FILENO);
  bm::Result<bm::train::dist::RankEnv> env = bm::train::dist::ReadRankEnvFromProcess();
  if (!env.ok()) return env.status();
  try {
    if (run->mode == bm::train::RunMode::kEvaluate)
      return bm::train::RunEvaluation(*run, &std::cerr);
    std::optional<bm::train::dist::Heartbeat> heartbeat;  // tells the launcher this rank lives
    if (env->world_size > 1 && !env->rendezvous.empty())
      heartbeat.emplace(env->rendezvous, env->rank);
    return bm::train::RunTraining(*run, &std::cerr, {}, *env);
  } catch (const std::bad_alloc&) {
    // PyTorch's DefaultCPUAllocator says as much; an abort with "std::bad_alloc" names nothing.
    return bm::Errorf(bm::ErrorCode::kFailed,
                      "out of host memory: this run (lbs {}, mpe {}) needs more than the "
                      "machine has",
                      run->lbs, run->mpe);
  }
}

int Usage() {
  std::cerr << "usage: benchmake-train --config RUN.json | --probe | --presets | --version\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bm::train::EnsureProcessEnvironment(argv);
  if (argc < 2) return Usage();
  const std::string arg = argv[1];
  if (arg == "--probe") {
    std::cout << bm::train::ProbePlatform().dump(2) << "\n";
    return 0;
  }
  if (arg == "--version") {
    std::cout << bm::train::TrainerBuildId() << "\n";
    return 0;
  }
  if (arg == "--presets") {
    for (const std::string& name : bm::train::PresetNames()) {
      bm::train::ModelConfig c = *bm::train::Preset(name);
      std::cout << fmt::format("{:<12} {:<5} {:>15L} parameters  L{} C{} H{} KV{} F{} V{} T{}\n",
                               name, bm::train::FamilyName(c.family), bm::train::ParameterCount(c),
                               c.layers, c.hidden, c.heads, c.kv_heads, c.ffn_hidden, c.vocab,
                               c.max_seq);
    }
    return 0;
  }
  if (arg == "--config" && argc == 3) {
    bm::Result<nlohmann::json> metrics = Run(argv[2]);
    if (!metrics.ok()) {
      std::cerr << "benchmake-train: " << metrics.status().message() << "\n";
      if (metrics.status().code() == bm::ErrorCode::kPeerLost)
        return bm::train::dist::kExitPeerLost;
      return metrics.status().ExitCode();
    }
    return 0;
  }
  return Usage();
}
