// Resume checkpoints: what a killed run needs to continue with the same bits,
// for any number of ranks. Each rank keeps its local state (Backend::
// GetLocalState: the master parameters and AdamW moments it owns — all of
// them, or its ZeRO shard); rank 0 keeps the run's bookkeeping.
//
//   DIR/LATEST                  "step-00000120\n" (rank 0, written last, atomically)
//   DIR/step-00000120/
//     state.json                {"format": "benchmake-resume", "version": 2, "step": 120,
//                                "fingerprint": "...", "ranks": 4, "sharded": true,
//                                "log": [...], "extra": {...}}
//     rank-00003.bin            rank 3's local state, grammar below; only rank-00000.bin
//                               when not sharded (every rank holds the same state)
//
//   rank-K.bin := magic "BMSTATE\0" version:u32le=2 rank:u32le step:u64le n:u64le
//                 params:f32le[n] m:f32le[n] v:f32le[n]
//
// The data position is the step number (windows are drawn from the
// counter-based RNG by step), so nothing else is needed. `fingerprint` is the
// canonical JSON of every setting that changes a run's bits, the layout and
// ZeRO stage included; a checkpoint with another fingerprint or rank count is
// ignored (the run starts over), never mixed in. Older step directories are
// removed after LATEST moves on. Version-1 checkpoints (one process, before
// ranks) are ignored the same way.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace bm::train {

struct ResumeState {
  int64_t step = 0;                                 // optimizer steps completed
  std::vector<float> params, m, v;                  // this rank's local state
  nlohmann::json log = nlohmann::json::array();     // the log.jsonl records so far (rank 0)
  nlohmann::json extra = nlohmann::json::object();  // loop state (rank 0)
};

struct ResumeRank {
  int rank = 0;
  int ranks = 1;
  bool sharded = false;  // each rank holds its own part (ZeRO >= 1)
};

// Writes this rank's file (when it has one: every rank if sharded, else rank
// 0) into DIR/step-N/. Then, after every rank has written (the caller's
// barrier), rank 0 calls CommitResume to write state.json and move LATEST.
Status SaveResumeRank(const std::string& dir, const ResumeRank& who, const ResumeState& state);
Status CommitResume(const std::string& dir, const ResumeRank& who, const std::string& fingerprint,
                    const ResumeState& state);

// This rank's view of the latest checkpoint: nullopt when DIR has none, its
// fingerprint, rank count or sharding differ, or it is an older version (with
// the reason in *why). state.params/m/v hold `local_size` floats. Errors:
// kCorrupt for a damaged checkpoint.
Result<std::optional<ResumeState>> LoadResume(const std::string& dir, const ResumeRank& who,
                                              const std::string& fingerprint, int64_t local_size,
                                              std::string* why);

}  // namespace bm::train
