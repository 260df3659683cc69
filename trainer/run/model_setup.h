// Resolving the model of a run and its starting parameters.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"
#include "trainer/run/run_config.h"

namespace bm::train {

struct ModelSetup {
  ModelConfig model;
  // The init checkpoint's parameters by range, read from the mapped file as a backend asks
  // for them (CheckpointParameters); empty: fresh initialization from the seed.
  ParamSource loaded;
  std::string init_file;  // the safetensors file read, if any
};

// pretrain: preset + overrides; the vocabulary defaults to the data's
// (stats.json vocab_size) unless overridden. finetune / evaluate: the init
// checkpoint's config.json and model.safetensors (init = a directory, or a
// .safetensors file with config.json beside it). Checks that mpe fits the
// model (max_seq) and that the data's vocabulary fits it.
Result<ModelSetup> SetUpModel(const RunConfig& run, const nlohmann::json& data_stats);

}  // namespace bm::train
