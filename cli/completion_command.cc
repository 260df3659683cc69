// The commands that print what the command tables generate: `benchmake
// completion bash|zsh`, the hidden `benchmake __complete WORD...` the scripts
// call, and the hidden `benchmake __man` the build turns into benchmake.1.
#include <cstdio>

#include "base/real_filesystem.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/flags.h"
#include "cli/man_page.h"
#include "engine/benchfile.h"

namespace bm::cli {
namespace {

// The BENCHFILE's target names, through the parser alone (no validation, no
// hashing, no ninja): completion must answer at once. Nothing on any error.
std::vector<std::string> BenchfileTargets(const ParsedArgs& args) {
  Result<engine::Workspace> ws = OpenWorkspaceFromFlags(args);
  if (!ws.ok()) return {};
  Result<std::string> text = ws->fs->ReadFile(ws->benchfile);
  if (!text.ok()) return {};
  Result<engine::Benchfile> bf = engine::ParseBenchfile(*text, ws->benchfile);
  if (!bf.ok()) return {};
  std::vector<std::string> names;
  for (const engine::RawTarget& t : bf->targets) names.push_back(t.name);
  return names;
}

}  // namespace

const CommandSpec& CompletionSpec() {
  static const CommandSpec kSpec{
      .name = "completion",
      .operands = "SHELL",
      .operand_kind = ValueKind::kChoice,
      .operand_choices = {"bash", "zsh"},
      .min_operands = 1,
      .max_operands = 1,
      .summary = "the shell completion script for bash or zsh",
      .description =
          "Prints a script that completes benchmake's commands, their flags, the "
          "flags' values and the target names of the BENCHFILE in the current "
          "workspace (or the one -C and -f name on the command line).",
      .examples = {{"source <(benchmake completion bash)", "in ~/.bashrc"},
                   {"source <(benchmake completion zsh)", "in ~/.zshrc, after compinit"},
                   {"benchmake completion zsh > ~/.zfunc/_benchmake",
                    "or as a file in a directory of $fpath"}}};
  return kSpec;
}

Status CompletionCommand(const ParsedArgs& args) {
  const std::string& shell = args.operands()[0];
  if (shell == "bash") {
    std::fputs(BashCompletionScript().c_str(), stdout);
  } else if (shell == "zsh") {
    std::fputs(ZshCompletionScript().c_str(), stdout);
  } else {
    return Errorf(ErrorCode::kInvalidArgument, "no completion for '{}': bash or zsh", shell);
  }
  return Status::Ok();
}

Status CompleteCommand(const std::vector<std::string>& words) {
  for (const std::string& c :
       Complete(words, CommandSpecs(true), TopLevelSpec(), &BenchfileTargets)) {
    std::printf("%s\n", c.c_str());
  }
  return Status::Ok();
}

const CommandSpec& ManSpec() {
  static const CommandSpec kSpec{.name = "__man",
                                 .summary = "print the man page benchmake.1 (roff)",
                                 .flags = {{.name = "--output",
                                            .short_name = "-o",
                                            .value_name = "FILE",
                                            .kind = ValueKind::kFile,
                                            .help = "write to FILE, atomically",
                                            .default_text = "stdout"}},
                                 .hidden = true};
  return kSpec;
}

Status ManCommand(const ParsedArgs& args) {
  std::string page = ManPage(CommandSpecs(true), TopLevelSpec(), engine::BenchmakeVersion());
  std::optional<std::string> output = args.Value("--output");
  if (!output) {
    std::fputs(page.c_str(), stdout);
    return Status::Ok();
  }
  return DiskFilesystem().WriteFileAtomic(*output, page).WithContext("writing " + *output);
}

}  // namespace bm::cli
