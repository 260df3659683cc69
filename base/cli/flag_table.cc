#include "base/cli/flag_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "base/nearest_name.h"

namespace bm::cli {

const std::vector<FlagSpec>& CommonFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {.name = "--directory",
       .short_name = "-C",
       .value_name = "DIR",
       .kind = ValueKind::kDir,
       .help = "run in DIR: its BENCHFILE.toml, out/ and .benchmake/",
       .default_text = "the current directory"},
      {.name = "--file",
       .short_name = "-f",
       .value_name = "FILE",
       .kind = ValueKind::kFile,
       .help = "read the targets from FILE; its directory is the workspace",
       .default_text = "DIR/BENCHFILE.toml"},
      {.name = "--color",
       .value_name = "WHEN",
       .kind = ValueKind::kChoice,
       .help = "color errors, notices and progress lines: auto (when writing to a terminal and "
               "NO_COLOR is unset), always or never",
       .default_text = "auto, or $BENCHMAKE_COLOR",
       .choices = {"auto", "always", "never"}},
      {.name = "--help", .short_name = "-h", .help = "print this help and exit"},
  };
  return kFlags;
}

std::optional<std::string> ParsedArgs::Value(std::string_view flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string ParsedArgs::ValueOr(std::string_view flag, std::string_view fallback) const {
  std::optional<std::string> v = Value(flag);
  return v ? *v : std::string(fallback);
}

ColorMode ParsedArgs::color() const {
  std::optional<std::string> v = Value("--color");
  if (!v) return ColorModeFromEnv();
  Result<ColorMode> mode = ParseColorMode(*v);  // ParseArgs checked the choices
  return mode.ok() ? *mode : ColorMode::kAuto;
}

void ParsedArgs::Set(std::string_view flag, std::string value) {
  values_.insert_or_assign(std::string(flag), std::move(value));
}

const FlagSpec* FindFlag(const CommandSpec& spec, std::string_view word) {
  for (const std::vector<FlagSpec>* table : {&spec.flags, &CommonFlags()}) {
    for (const FlagSpec& f : *table) {
      if (f.name == word || (!f.short_name.empty() && f.short_name == word)) return &f;
    }
  }
  return nullptr;
}

std::vector<std::string> FlagNames(const CommandSpec& spec) {
  std::vector<std::string> out;
  for (const std::vector<FlagSpec>* table : {&spec.flags, &CommonFlags()}) {
    for (const FlagSpec& f : *table) {
      out.emplace_back(f.name);
      if (!f.short_name.empty()) out.emplace_back(f.short_name);
    }
  }
  return out;
}

namespace {

// The top-level table is named "benchmake".
std::string SeeHelp(const CommandSpec& spec) {
  if (spec.name == "benchmake") return " (see `benchmake --help`)";
  return fmt::format(" (see `benchmake {} --help`)", spec.name);
}

Status UnknownFlag(const CommandSpec& spec, std::string_view word) {
  std::string near = DidYouMean(word, FlagNames(spec));
  return Errorf(ErrorCode::kInvalidArgument, "unknown flag '{}' for {}{}{}", word, spec.name, near,
                near.empty() ? SeeHelp(spec) : "");
}

Status CheckChoice(const CommandSpec& spec, const FlagSpec& f, const std::string& value) {
  std::vector<std::string> choices(f.choices.begin(), f.choices.end());
  for (const std::string& c : choices) {
    if (c == value) return Status::Ok();
  }
  return Errorf(ErrorCode::kInvalidArgument, "{} wants one of {}, not '{}'{}{}", f.name,
                fmt::join(choices, ", "), value, DidYouMean(value, choices), SeeHelp(spec));
}

}  // namespace

Result<ParsedArgs> ParseArgs(const CommandSpec& spec, const std::vector<std::string>& args,
                             const ParsedArgs& base) {
  ParsedArgs out = base;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a.size() < 2 || a[0] != '-') {
      out.AddOperand(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::string word = a;
    std::optional<std::string> attached;  // --name=VALUE, -xVALUE
    if (a.starts_with("--")) {
      if (size_t eq = a.find('='); eq != std::string::npos) {
        word = a.substr(0, eq);
        attached = a.substr(eq + 1);
      }
    } else if (a.size() > 2) {
      word = a.substr(0, 2);
      attached = a.substr(2);
    }
    const FlagSpec* f = FindFlag(spec, word);
    if (f == nullptr || (attached && !f->takes_value() && !a.starts_with("--"))) {
      return UnknownFlag(spec, a.starts_with("--") ? word : a);
    }
    if (!f->takes_value()) {
      if (attached) {
        return Errorf(ErrorCode::kInvalidArgument, "{} takes no value{}", f->name, SeeHelp(spec));
      }
      out.Set(f->name, "");
      continue;
    }
    std::string value;
    if (attached) {
      value = *attached;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Errorf(ErrorCode::kInvalidArgument, "{} needs a value: {} {}{}", word, word,
                    f->value_name, SeeHelp(spec));
    }
    if (f->kind == ValueKind::kChoice) BM_TRY(CheckChoice(spec, *f, value));
    out.Set(f->name, std::move(value));
  }
  return out;
}

Status CheckOperands(const CommandSpec& spec, const ParsedArgs& args) {
  int n = static_cast<int>(args.operands().size());
  if (n >= spec.min_operands && (spec.max_operands < 0 || n <= spec.max_operands)) {
    return Status::Ok();
  }
  std::string what;
  if (spec.max_operands == 0) {
    what = fmt::format("{} takes no operands, got '{}'", spec.name, args.operands()[0]);
  } else if (n < spec.min_operands) {
    what = fmt::format("{} needs {}", spec.name, spec.operands);
  } else {
    what = fmt::format("{} takes at most {} operand{}, got {}", spec.name, spec.max_operands,
                       spec.max_operands == 1 ? "" : "s", n);
  }
  return Errorf(ErrorCode::kInvalidArgument, "{}\n{}", what, UsageLine(spec));
}

Result<ParsedArgs> ParseCommandLine(const CommandSpec& spec, const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, ParseArgs(spec, args));
  BM_TRY(CheckOperands(spec, parsed));
  return parsed;
}

std::string UsageLine(const CommandSpec& spec) {
  std::string line = fmt::format("usage: benchmake {} [OPTIONS]", spec.name);
  if (!spec.operands.empty()) line += fmt::format(" {}", spec.operands);
  return line;
}

Result<int> ParseIntFlag(std::string_view flag, std::string_view value) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 0) {
    return Errorf(ErrorCode::kInvalidArgument, "{} wants a non-negative integer, not '{}'", flag,
                  value);
  }
  return v;
}

}  // namespace bm::cli
