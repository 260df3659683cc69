// `benchmake build` and `benchmake step` (the command each ninja edge runs).
#include <unistd.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/build.h"
#include "engine/step.h"

namespace bm::cli {

const CommandSpec& BuildSpec() {
  static const CommandSpec kSpec{
      .name = "build",
      .operands = "[TARGET...]",
      .operand_kind = ValueKind::kTarget,
      .max_operands = -1,
      .summary = "bring targets up to date (ninja runs the stale steps)",
      .description =
          "Brings the TARGETs (default: every target of the BENCHFILE) and what they depend on "
          "up to date. Every input is hashed; a step whose key is in the cache (local, then "
          "remote) is restored without running, and only the stale steps run, through ninja. A "
          "failed step records nothing and shows its log.",
      .flags = {{.name = "--jobs",
                 .short_name = "-j",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "run N steps at once; 0: no limit (ninja -j)",
                 .default_text = "[benchmake] jobs in the BENCHFILE, else ninja's"},
                {.name = "--keep-going",
                 .short_name = "-k",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "keep going until N steps failed; 0: never stop (ninja -k)",
                 .default_text = "1"},
                {.name = "--dry-run",
                 .short_name = "-n",
                 .help = "show what would run without running it (ninja -n)"},
                {.name = "--remeasure",
                 .help = "after building, take one more measurement of each TARGET (needs "
                         "TARGETs; docs/REPORTS.md)"},
                {.name = "--executor",
                 .value_name = "WHERE",
                 .kind = ValueKind::kChoice,
                 .help = "where stale steps' processes run: local (this machine) or slurm "
                         "(srun on the cluster; docs/CLUSTER.md)",
                 .default_text = "$BENCHMAKE_EXECUTOR, else [benchmake] executor in the BENCHFILE, "
                                 "else local",
                 .choices = {"local", "slurm"}},
                {.name = "--debug-key",
                 .value_name = "TARGET",
                 .kind = ValueKind::kTarget,
                 .help = "print exactly what TARGET's key hashes instead of building"}},
      .examples = {
          {"benchmake build", "every target"},
          {"benchmake build -j 2 pretrain", "pretrain and what it needs, two at a time"},
          {"benchmake build --remeasure pretrain",
           "one more throughput measurement of pretrain, reusing its checkpoint"},
          {"benchmake build --executor slurm", "run the stale steps on the Slurm cluster"}}};
  return kSpec;
}

Status BuildCommand(const ParsedArgs& args) {
  if (std::optional<std::string> target = args.Value("--debug-key")) {
    ParsedArgs debug = args;
    debug.AddOperand(*target);
    if (debug.operands().size() != 1) {
      return Errorf(ErrorCode::kInvalidArgument, "--debug-key takes one TARGET and no others");
    }
    return DebugKeyCommand(debug);
  }
  engine::BuildOptions options;
  options.targets = args.operands();
  if (std::optional<std::string> jobs = args.Value("--jobs")) {
    BM_ASSIGN_OR_RETURN(int n, ParseIntFlag("--jobs", *jobs));
    options.jobs = n;
  }
  if (std::optional<std::string> k = args.Value("--keep-going")) {
    BM_ASSIGN_OR_RETURN(options.keep_going, ParseIntFlag("--keep-going", *k));
  }
  options.dry_run = args.Has("--dry-run");
  options.remeasure = args.Has("--remeasure");
  options.executor = args.ValueOr("--executor", "");
  options.color = UseColor(args.color(), STDOUT_FILENO);
  if (options.remeasure && options.targets.empty()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "--remeasure needs the targets to measure again: build --remeasure TARGET...");
  }
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  return engine::BuildWithNinja(ws, options);
}

const CommandSpec& StepSpec() {
  static const CommandSpec kSpec{
      .name = "step",
      .operands = "TARGET",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 1,
      .max_operands = 1,
      .summary = "run one target's step (what ninja's edges call)",
      .description =
          "Runs the step of TARGET alone, as the edges of .benchmake/build.ninja do: looks its "
          "key up in the cache and restores the outputs on a hit, else runs the rule and records "
          "the result. Its inputs must be built already; `benchmake build` is what people run.",
      .flags = {{.name = "--remeasure",
                 .help = "take one more measurement even when the step is cached"}},
      .examples = {{"benchmake step tokens", "the step of `tokens`, its inputs being built"}}};
  return kSpec;
}

Status StepCommand(const ParsedArgs& args) {
  engine::KeepWorkspaceLockFromCommands();
  engine::StepOptions options;
  options.remeasure = args.Has("--remeasure");
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  options.interactive = ::isatty(STDOUT_FILENO) || ::isatty(STDERR_FILENO);
  options.color = UseColor(args.color(), STDOUT_FILENO);
  options.console = &std::cout;
  BM_ASSIGN_OR_RETURN(engine::StepReport report, engine::RunStep(ws, args.operands()[0], options));
  (void)report;
  return Status::Ok();
}

}  // namespace bm::cli
