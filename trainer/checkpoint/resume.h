// Resume checkpoints: what a killed run needs to continue with the same bits.
//
//   DIR/LATEST                  "step-00000120\n" (written last, atomically)
//   DIR/step-00000120/
//     model.safetensors         parameters (as a model checkpoint)
//     config.json
//     optimizer.bin             AdamW moments, grammar below
//     state.json                {"format": "benchmake-resume", "version": 1, "step": 120,
//                                "fingerprint": "...", "log": [...], "extra": {...}}
//
//   optimizer.bin := magic "BMOPTIM\0" version:u32le=1 reserved:u32le=0
//                    step:u64le n:u64le m:f32le[n] v:f32le[n]
//
// The data position is the step number (windows are drawn from the
// counter-based RNG by step), so nothing else is needed. `fingerprint` is the
// canonical JSON of every setting that changes a run's bits; a checkpoint
// with another fingerprint is ignored (the run starts over), never mixed in.
// Older step directories are removed after LATEST moves on.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"

namespace bm::train {

struct ResumeState {
  int64_t step = 0;  // optimizer steps completed
  std::vector<float> params, m, v;
  nlohmann::json log = nlohmann::json::array();     // the log.jsonl records so far
  nlohmann::json extra = nlohmann::json::object();  // loop state (e.g. first loss)
};

Status SaveResume(const std::string& dir, const ModelConfig& config, const std::string& fingerprint,
                  const ResumeState& state);

// nullopt when DIR has no checkpoint or its fingerprint differs (with the
// reason in *why when non-null). Errors: kCorrupt for a damaged checkpoint.
Result<std::optional<ResumeState>> LoadResume(const std::string& dir, const ModelConfig& config,
                                              const std::string& fingerprint, std::string* why);

}  // namespace bm::train
