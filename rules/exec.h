// The `exec` rule: any command with declared outputs — how external trainers
// (PyTorch, Megatron, shell scripts) are benchmarked under the same engine.
//
//   [target.hello]
//   rule = "exec"
//   command = ["sh", "-c", "echo hi > {out}/hello.txt"]   # argv; no shell unless shell = true
//   inputs = ["data.txt", "other_target"]                  # files or targets
//   outputs = ["hello.txt"]                                 # relative to {out}; missing = failure
//   env = { LANG = "C" }
//   metrics = "metrics.json"                                # optional, one of the outputs
//   log_format = "megatron"        # or: an external trainer's log, parsed into metrics.json and
//   log = "train.log"              # log.jsonl (rules/external_metrics.h lists the parameters)
//
// Placeholders in command and env values: {out} (the step's output dir),
// {in.NAME} (the path of input NAME as written), {scratch} (the working
// directory), {workspace}, {resume}. The same reach the command as environment
// variables BENCHMAKE_OUT, BENCHMAKE_IN_<NAME> (upper case, other characters
// '_'), BENCHMAKE_SCRATCH, BENCHMAKE_WORKSPACE, BENCHMAKE_RESUME_DIR,
// BENCHMAKE_TARGET. A declared output that the command left in its working
// directory instead of {out} is moved there.
#pragma once

#include <memory>

#include "engine/rule.h"

namespace bm::rules {

std::unique_ptr<engine::Rule> MakeExecRule();

// The `measure` rule: `exec` whose results depend on the platform — an
// external trainer or benchmark whose metrics are measurements. Same
// parameters as exec; its key includes the platform facts, and it accepts
// `rounds = N` and `benchmake build --remeasure` (engine/step.h, step 6).
std::unique_ptr<engine::Rule> MakeMeasureRule();

}  // namespace bm::rules
