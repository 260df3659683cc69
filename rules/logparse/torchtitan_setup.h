// The start-up lines of a torchtitan run (rules/logparse/torchtitan.cc) that state its shape: the
// batch and sequence length, the device mesh, the model's size, where training starts. Read into
// the log's facts (lbs, gbs, gas, mpe, devices, tp, pp, dp, parameters; the first statement wins,
// as every rank prints the same) and a TorchtitanSetup for what is no fact.
//
// The lines, as torchtitan's trainer prints them (pytorch/torchtitan, torchtitan/trainer.py,
// train.py before 2025-03):
//   Training starts at step 1, with local batch size 1, global batch size 8, sequence length
//     8192, total steps 100 (warmup 200)                              (train.py, to 2025-02)
//   Trainer is initialized with local batch size 8, global batch size 64, [gradient accumulation
//     steps 1, ]sequence length 2048, total steps 10 (warmup 2)      (2025-03 to 2026-08; the
//     accumulation since 8570415, June 2025)
//   Trainer is initialized with 8192 tokens per DP rank, 65536 tokens per train step, gradient
//     accumulation steps 1, maximum context length 8192, total steps ...  (since 73aed7f, 2026-08)
//   Training starts at step 21                                        (since 2025-03)
//   Building 1-D device mesh with ['dp_shard'], [8]                   (parallel_dims.py, to
//   2025-10) Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1,
//   ep=1
//     [, etp=1]                                                        (since 2025-10)
//   Model llama3 8B size: 8,030,261,248 total parameters
// The world size is the product of the mesh's degrees (ep and etp shard inside the others); the
// data-parallel degree is dp_replicate x dp_shard (the dims named dp*).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

struct TorchtitanSetup {
  std::optional<Fact> tokens_per_step;  // "N tokens per train step" (all ranks)
  int64_t trainer_line = 0;             // the first line stating the batch, 0 if none
  int64_t mesh_line = 0;                // the first device mesh line, 0 if none
};

// Reads one line: sets the facts it states and returns the step of a "Training starts at step
// N" line (a run, fresh or resumed, starts there), else nullopt. kCorrupt ("NAME:LINE: ...")
// for a recognised line whose number does not parse.
Result<std::optional<int64_t>> ReadTorchtitanSetupLine(std::string_view line, int64_t no,
                                                       std::string_view name, ParsedLog& log,
                                                       TorchtitanSetup& setup);

}  // namespace bm::logparse
