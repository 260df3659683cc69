#include "engine/cli/commands.h"

#include <cstdio>

#include "engine/workspace.h"
#include "rules/tokenize_command.h"

namespace bm::engine::cli {

const std::vector<CommandEntry>& Commands() {
  static const std::vector<CommandEntry> kCommands = {
      {"build", "build [TARGET...] [-j N] [-k N] [-n] [--remeasure]",
       "bring targets up to date (ninja); --remeasure: measure them again", &BuildCommand},
      {"explain", "explain TARGET...", "why a target is (not) up to date, field by field",
       &ExplainCommand},
      {"status", "status", "every target and its state", &StatusCommand},
      {"graph", "graph", "the target graph as Graphviz dot", &GraphCommand},
      {"clean", "clean", "remove out/ and .benchmake/ (never the shared cache)", &CleanCommand},
      {"cache", "cache stats|verify|gc --max-size SIZE|push|pull [TARGET...]",
       "inspect and trim the local cache; push to / pull from the remote", &CacheCommand},
      {"debug-key", "debug-key TARGET (or --debug-key TARGET)", "print exactly what the key hashes",
       &DebugKeyCommand},
      {"step", "step TARGET [--remeasure]", "run one target (what ninja edges call)", &StepCommand},
      {"tokenize",
       "tokenize --vocab FILE [--tokenizer KIND] [--threads N] [--bos] [--eot] [--decode] "
       "[INPUT|-]",
       "token ids of a text, one per line (or --decode ids to bytes)", &rules::TokenizeCommand},
      {"report", "report [TARGET|NAME@WHERE|PATH...] [--format md|json|csv|html] [-o FILE]",
       "tables and plots of the measurements (docs/REPORTS.md)", &ReportCommand},
      {"compare", "compare A B [--from-step N] [--tolerance PCT] [--no-alignment]",
       "metric deltas and loss alignment of two runs", &CompareCommand},
      // Other modules add one line each here; a two-word name such as
      // "cache push" is matched before the one-word "cache".
  };
  return kCommands;
}

namespace {

void PrintHelp() {
  std::printf("usage: benchmake [-C DIR] [-f BENCHFILE] COMMAND [ARGS]\n\ncommands:\n");
  for (const CommandEntry& c : Commands()) {
    std::printf("  %-44s %s\n", std::string(c.usage).c_str(), std::string(c.summary).c_str());
  }
}

bool TakesValue(const std::string& flag) { return flag == "-C" || flag == "-f"; }

}  // namespace

Status Dispatch(const std::vector<std::string>& args) {
  std::vector<std::string> global;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    if (TakesValue(args[i]) && i + 1 < args.size()) {
      global.push_back(args[i]);
      global.push_back(args[++i]);
    } else if (args[i] == "--debug-key") {
      std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
      rest.insert(rest.end(), global.begin(), global.end());
      return DebugKeyCommand(rest);
    } else {
      break;
    }
  }
  if (i == args.size() || args[i] == "help" || args[i] == "--help" || args[i] == "-h") {
    PrintHelp();
    return Status::Ok();
  }
  if (args[i] == "--version") {
    std::printf("benchmake %s\n", BenchmakeVersion().c_str());
    return Status::Ok();
  }
  std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  // `build --debug-key T` is the same as `--debug-key T`.
  for (size_t j = 0; j < rest.size(); ++j) {
    if (rest[j] == "--debug-key") {
      std::vector<std::string> dk(rest.begin() + static_cast<long>(j) + 1, rest.end());
      dk.insert(dk.end(), global.begin(), global.end());
      return DebugKeyCommand(dk);
    }
  }
  rest.insert(rest.end(), global.begin(), global.end());
  // Two-word commands ("cache push") win over one-word ones ("cache").
  if (i + 1 < args.size()) {
    std::string two = fmt::format("{} {}", args[i], args[i + 1]);
    for (const CommandEntry& c : Commands()) {
      if (c.name == two) return c.fn(std::vector<std::string>(rest.begin() + 1, rest.end()));
    }
  }
  for (const CommandEntry& c : Commands()) {
    if (c.name == args[i]) return c.fn(rest);
  }
  return Errorf(ErrorCode::kInvalidArgument, "unknown command '{}' (see `benchmake help`)",
                args[i]);
}

}  // namespace bm::engine::cli
