#include "cli/help.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace bm::cli {
namespace {

constexpr size_t kWidth = 80;
constexpr size_t kFlagColumn = 26;  // where a flag's help starts

// "help text [default: X]".
std::string FlagText(const FlagSpec& f) {
  std::string text(f.help);
  if (!f.default_text.empty()) text += fmt::format(" [default: {}]", f.default_text);
  return text;
}

// One flag per entry: the synopsis, then its text from kFlagColumn on
// (on the next line when the synopsis is too wide).
void AppendHelpFlags(std::string& out, const std::vector<FlagSpec>& flags) {
  for (const FlagSpec& f : flags) {
    std::string synopsis = "  " + FlagSynopsis(f);
    std::string text = Wrap(FlagText(f), kWidth, kFlagColumn);
    if (synopsis.size() + 2 <= kFlagColumn) {
      out += synopsis + text.substr(synopsis.size());
    } else {
      out += synopsis + "\n" + text;
    }
  }
}

}  // namespace

std::string Wrap(std::string_view text, size_t width, size_t indent) {
  std::string out;
  std::string pad(indent, ' ');
  std::istringstream paragraphs{std::string(text)};
  bool first_paragraph = true;
  for (std::string line; std::getline(paragraphs, line);) {
    if (line.empty()) {
      if (!first_paragraph) out += "\n";
      continue;
    }
    first_paragraph = false;
    std::istringstream words(line);
    std::string current = pad;
    for (std::string w; words >> w;) {
      if (current.size() > indent && current.size() + 1 + w.size() > width) {
        out += current + "\n";
        current = pad;
      }
      if (current.size() > indent) current += ' ';
      current += w;
    }
    out += current + "\n";
  }
  return out;
}

std::string FlagSynopsis(const FlagSpec& f) {
  std::string s;
  if (!f.short_name.empty() && f.short_name != f.name) {
    s = fmt::format("{}, {}", f.short_name, f.name);
  } else if (f.name.starts_with("--")) {
    s = fmt::format("    {}", f.name);
  } else {
    s = std::string(f.name);
  }
  if (f.takes_value()) s += fmt::format(" {}", f.value_name);
  return s;
}

std::string CommandHelp(const CommandSpec& spec) {
  std::string out = UsageLine(spec) + "\n\n";
  out += Wrap(spec.description.empty() ? std::string(spec.summary) : spec.description, kWidth, 0);
  if (!spec.flags.empty()) {
    out += "\noptions:\n";
    AppendHelpFlags(out, spec.flags);
  }
  out += "\ncommon options:\n";
  AppendHelpFlags(out, CommonFlags());
  if (!spec.examples.empty()) {
    out += "\nexamples:\n";
    for (const Example& e : spec.examples) {
      out += fmt::format("  {}\n", e.command);
      out += Wrap(e.what, kWidth, 6);
    }
  }
  return out;
}

std::vector<const CommandSpec*> GroupMembers(std::string_view group,
                                             const std::vector<const CommandSpec*>& specs) {
  std::vector<const CommandSpec*> out;
  for (const CommandSpec* s : specs) {
    if (s->name.size() > group.size() && s->name.starts_with(group) &&
        s->name[group.size()] == ' ') {
      out.push_back(s);
    }
  }
  return out;
}

bool IsGroup(std::string_view word, const std::vector<const CommandSpec*>& specs) {
  for (const CommandSpec* s : specs) {
    if (s->name == word) return false;
  }
  return !GroupMembers(word, specs).empty();
}

std::vector<std::string> FirstWords(const std::vector<const CommandSpec*>& specs) {
  std::vector<std::string> out;
  for (const CommandSpec* s : specs) {
    std::string first(s->name.substr(0, s->name.find(' ')));
    if (std::find(out.begin(), out.end(), first) == out.end()) out.push_back(first);
  }
  return out;
}

std::string GroupHelp(std::string_view group, const std::vector<const CommandSpec*>& specs) {
  std::vector<const CommandSpec*> members = GroupMembers(group, specs);
  std::string out =
      fmt::format("usage: benchmake {} COMMAND [OPTIONS] [ARGS]\n\ncommands:\n", group);
  for (const CommandSpec* s : members) {
    out += fmt::format("  {:<24}{}\n", s->name, s->summary);
  }
  out += fmt::format("\n`benchmake {} COMMAND --help` tells more about each.\n", group);
  return out;
}

std::string GeneralHelp(const std::vector<const CommandSpec*>& specs, const CommandSpec& top) {
  std::string out =
      "usage: benchmake [OPTIONS] COMMAND [ARGS]\n\n"
      "make for AI training benchmarks: brings the targets of BENCHFILE.toml up to date, "
      "reusing every cached step.\n\ncommands:\n";
  for (const CommandSpec* s : specs) {
    if (s->hidden) continue;
    std::string line = fmt::format("  {:<16}", s->name);
    if (line.size() > 18) line += "  ";
    out += line + Wrap(s->summary, kWidth, line.size()).substr(line.size());
  }
  out += "\noptions:\n";
  AppendHelpFlags(out, top.flags);
  AppendHelpFlags(out, CommonFlags());
  out +=
      "\n`benchmake help COMMAND` or `benchmake COMMAND --help` tells more about a command;\n"
      "`man benchmake` about files, environment variables and exit codes.\n";
  return out;
}

}  // namespace bm::cli
