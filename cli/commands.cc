#include "cli/commands.h"

#include <cstdio>

#include "base/nearest_name.h"
#include "cli/help.h"
#include "engine/report/report_args.h"
#include "engine/workspace.h"
#include "rules/tokenize_command.h"

namespace bm::cli {
namespace {

const CommandSpec& HelpSpec();
Status HelpCommand(const ParsedArgs& args);

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {&BuildSpec(), &BuildCommand},
      {&ExplainSpec(), &ExplainCommand},
      {&StatusSpec(), &StatusCommand},
      {&GraphSpec(), &GraphCommand},
      {&report::ReportSpec(), &ReportCommand},
      {&report::CompareSpec(), &CompareCommand},
      {&CleanSpec(), &CleanCommand},
      {&CacheStatsSpec(), &CacheStatsCommand},
      {&CacheVerifySpec(), &CacheVerifyCommand},
      {&CacheGcSpec(), &CacheGcCommand},
      {&CachePushSpec(), &CachePushCommand},
      {&CachePullSpec(), &CachePullCommand},
      {&rules::TokenizeSpec(), &rules::TokenizeCommand},
      {&DebugKeySpec(), &DebugKeyCommand},
      {&StepSpec(), &StepCommand},
      {&HelpSpec(), &HelpCommand},
      {&CompletionSpec(), &CompletionCommand},
      {&ManSpec(), &ManCommand},
      // One line per command; its table lives beside the code that reads it.
  };
  return kCommands;
}

std::vector<const CommandSpec*> CommandSpecs(bool visible_only) {
  std::vector<const CommandSpec*> out;
  for (const Command& c : Commands()) {
    if (!visible_only || !c.spec->hidden) out.push_back(c.spec);
  }
  return out;
}

const CommandSpec& TopLevelSpec() {
  static const CommandSpec kSpec{
      .name = "benchmake",
      .flags = {{.name = "--version", .help = "print the version and exit"},
                {.name = "--debug-key",
                 .value_name = "TARGET",
                 .kind = ValueKind::kTarget,
                 .help = "print exactly what TARGET's key hashes (as `benchmake debug-key`)"}},
      .hidden = true};
  return kSpec;
}

namespace {

const Command* Find(std::string_view name) {
  for (const Command& c : Commands()) {
    if (c.spec->name == name) return &c;
  }
  return nullptr;
}

bool IsGroup(std::string_view word) { return cli::IsGroup(word, CommandSpecs(true)); }

// The command named by words[i] (and words[i + 1] for a group); *used = how
// many words the name took. A group without a valid second word is an error
// naming the group's commands.
Result<const Command*> Resolve(const std::vector<std::string>& words, size_t i, size_t* used) {
  const std::string& first = words[i];
  if (IsGroup(first)) {
    std::vector<std::string> subs;
    for (const CommandSpec* s : GroupMembers(first, CommandSpecs(true))) {
      subs.emplace_back(s->name.substr(first.size() + 1));
    }
    if (i + 1 < words.size()) {
      if (const Command* c = Find(first + " " + words[i + 1])) {
        *used = 2;
        return c;
      }
      if (!words[i + 1].starts_with("-")) {
        return Errorf(ErrorCode::kInvalidArgument, "unknown {} command '{}'{} (commands: {})",
                      first, words[i + 1], DidYouMean(words[i + 1], subs), fmt::join(subs, ", "));
      }
    }
    return Errorf(ErrorCode::kInvalidArgument, "{} needs a command: {} (see `benchmake {} --help`)",
                  first, fmt::join(subs, ", "), first);
  }
  if (const Command* c = Find(first)) {
    *used = 1;
    return c;
  }
  std::string near = DidYouMean(first, FirstWords(CommandSpecs(true)));
  return Errorf(ErrorCode::kInvalidArgument, "unknown command '{}'{}{}", first, near,
                near.empty() ? " (see `benchmake help`)" : "");
}

const CommandSpec& HelpSpec() {
  static const CommandSpec kSpec{
      .name = "help",
      .operands = "[COMMAND]",
      .operand_kind = ValueKind::kCommand,
      .max_operands = 2,
      .summary = "help on benchmake or one of its commands",
      .description =
          "Without COMMAND: every command with a line on what it does, and the "
          "options every command takes. With COMMAND: the same as `benchmake COMMAND "
          "--help`: usage, what it does, each flag with its default, examples.",
      .examples = {{"benchmake help build", "the flags of `benchmake build`"},
                   {"benchmake help cache", "the cache commands"}}};
  return kSpec;
}

Status HelpCommand(const ParsedArgs& args) {
  const std::vector<std::string>& words = args.operands();
  if (words.empty()) {
    std::fputs(GeneralHelp(CommandSpecs(true), TopLevelSpec()).c_str(), stdout);
    return Status::Ok();
  }
  if (IsGroup(words[0]) && words.size() == 1) {
    std::fputs(GroupHelp(words[0], CommandSpecs(true)).c_str(), stdout);
    return Status::Ok();
  }
  size_t used = 0;
  BM_ASSIGN_OR_RETURN(const Command* c, Resolve(words, 0, &used));
  if (used != words.size()) {
    return Errorf(ErrorCode::kInvalidArgument, "help takes one command, not '{}'",
                  fmt::join(words, " "));
  }
  std::fputs(CommandHelp(*c->spec).c_str(), stdout);
  return Status::Ok();
}

}  // namespace

Status Dispatch(const std::vector<std::string>& args, ColorMode* color) {
  // The words before the command name: common and top-level flags (with their
  // values). `--debug-key T` there is the command `debug-key T`.
  const CommandSpec& top = TopLevelSpec();
  size_t i = 0;
  while (i < args.size() && args[i].size() > 1 && args[i][0] == '-' && args[i] != "--debug-key") {
    const FlagSpec* f = FindFlag(top, args[i]);
    i += (f != nullptr && f->takes_value() && i + 1 < args.size()) ? 2 : 1;
  }
  std::vector<std::string> leading(args.begin(), args.begin() + static_cast<long>(i));
  BM_ASSIGN_OR_RETURN(ParsedArgs global, ParseArgs(top, leading));
  *color = global.color();
  if (!global.operands().empty()) {  // only a "-" can land here
    return Errorf(ErrorCode::kInvalidArgument, "unexpected '{}' before the command",
                  global.operands()[0]);
  }
  if (global.Has("--version")) {
    std::printf("benchmake %s\n", engine::BenchmakeVersion().c_str());
    return Status::Ok();
  }
  if (i == args.size() || global.help()) {
    std::fputs(GeneralHelp(CommandSpecs(true), top).c_str(), stdout);
    return Status::Ok();
  }
  std::vector<std::string> words = args;
  if (words[i] == "--debug-key") words[i] = "debug-key";
  if (words[i] == "__complete") {
    return CompleteCommand(
        std::vector<std::string>(words.begin() + static_cast<long>(i) + 1, words.end()));
  }
  if (IsGroup(words[i]) && i + 1 < words.size() &&
      (words[i + 1] == "--help" || words[i + 1] == "-h")) {
    std::fputs(GroupHelp(words[i], CommandSpecs(true)).c_str(), stdout);
    return Status::Ok();
  }
  size_t used = 0;
  BM_ASSIGN_OR_RETURN(const Command* command, Resolve(words, i, &used));
  std::vector<std::string> rest(words.begin() + static_cast<long>(i + used), words.end());
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, ParseArgs(*command->spec, rest, global));
  *color = parsed.color();
  if (parsed.help()) {
    std::fputs(CommandHelp(*command->spec).c_str(), stdout);
    return Status::Ok();
  }
  BM_TRY(CheckOperands(*command->spec, parsed));
  return command->run(parsed);
}

}  // namespace bm::cli
