#include "cli/completion.h"

#include <algorithm>

#include "cli/help.h"

namespace bm::cli {
namespace {

const CommandSpec* FindSpec(std::string_view name, const std::vector<const CommandSpec*>& specs) {
  for (const CommandSpec* s : specs) {
    if (s->name == name) return s;
  }
  return nullptr;
}

// What the words before the cursor say: the command (null before its name), the
// group typed so far, its operands so far, the common flags' values, the
// flag waiting for its value, and whether "--" ended the flags (as ParseArgs
// reads it: every word after it is an operand, "-x" too).
struct Context {
  const CommandSpec* command = nullptr;
  std::string group;
  std::vector<std::string> operands;
  ParsedArgs common;
  const FlagSpec* pending = nullptr;
  bool flags_ended = false;
};

Context Read(const std::vector<std::string>& words, const std::vector<const CommandSpec*>& specs,
             const CommandSpec& top) {
  Context c;
  for (const std::string& w : words) {
    const CommandSpec& current = c.command ? *c.command : top;
    if (c.pending) {
      if (c.pending->name == "--directory" || c.pending->name == "--file")
        c.common.Set(c.pending->name, w);
      c.pending = nullptr;
    } else if (w == "--" && !c.flags_ended) {
      c.flags_ended = true;
    } else if (!c.flags_ended && w.size() > 1 && w[0] == '-') {
      size_t eq = w.find('=');
      const FlagSpec* f = FindFlag(current, w.substr(0, eq));
      if (f == nullptr || !f->takes_value()) continue;
      if (eq == std::string::npos) {
        c.pending = f;
      } else if (f->name == "--directory" || f->name == "--file") {
        c.common.Set(f->name, w.substr(eq + 1));
      }
    } else if (c.command) {
      c.operands.push_back(w);
    } else if (!c.group.empty()) {
      c.command = FindSpec(c.group + " " + w, specs);
    } else if (IsGroup(w, specs)) {
      c.group = w;
    } else {
      c.command = FindSpec(w, specs);
      if (c.command == nullptr) c.command = &top;  // unknown: complete nothing more
    }
  }
  return c;
}

// The commands of `group` without it: "stats", "gc" for "cache".
std::vector<std::string> SecondWords(const std::string& group,
                                     const std::vector<const CommandSpec*>& specs) {
  std::vector<std::string> out;
  for (const CommandSpec* s : GroupMembers(group, specs))
    out.emplace_back(s->name.substr(group.size() + 1));
  return out;
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

std::vector<std::string> ValuesOf(ValueKind kind, const std::vector<std::string_view>& choices,
                                  const Context& c, const std::vector<const CommandSpec*>& specs,
                                  const TargetLister& targets) {
  switch (kind) {
    case ValueKind::kFile:
      return {std::string(kCompleteFiles)};
    case ValueKind::kDir:
      return {std::string(kCompleteDirs)};
    case ValueKind::kTarget:
      return targets(c.common);
    case ValueKind::kChoice:
      return Strings(choices);
    case ValueKind::kCommand:
      // A command's name, or the second word after a group's (help cache gc).
      if (c.operands.empty()) return FirstWords(specs);
      if (c.operands.size() == 1 && IsGroup(c.operands[0], specs)) {
        return SecondWords(c.operands[0], specs);
      }
      return {};
    case ValueKind::kNone:
    case ValueKind::kText:
    case ValueKind::kNumber:
      break;
  }
  return {};
}

// The candidates starting with `prefix` (paths requests pass as they are),
// each once, with `lead` put before each.
std::vector<std::string> Matching(const std::vector<std::string>& all, std::string_view prefix,
                                  std::string_view lead = "") {
  if (all.size() == 1 && (all[0] == kCompleteFiles || all[0] == kCompleteDirs)) return all;
  std::vector<std::string> out;
  for (const std::string& a : all) {
    std::string candidate = std::string(lead) + a;
    if (a.starts_with(prefix) && std::find(out.begin(), out.end(), candidate) == out.end())
      out.push_back(candidate);
  }
  return out;
}

}  // namespace

std::vector<std::string> Complete(const std::vector<std::string>& words,
                                  const std::vector<const CommandSpec*>& specs,
                                  const CommandSpec& top, const TargetLister& targets) {
  if (words.empty()) return {};
  const std::string& cur = words.back();
  Context c = Read(std::vector<std::string>(words.begin(), words.end() - 1), specs, top);
  const CommandSpec& spec = c.command ? *c.command : top;
  if (c.pending) {
    return Matching(ValuesOf(c.pending->kind, c.pending->choices, c, specs, targets), cur);
  }
  if (cur.starts_with("-") && !c.flags_ended) {
    size_t eq = cur.find('=');
    if (eq == std::string::npos) return Matching(FlagNames(spec), cur);
    const FlagSpec* f = FindFlag(spec, cur.substr(0, eq));
    if (f == nullptr || !f->takes_value()) return {};
    return Matching(ValuesOf(f->kind, f->choices, c, specs, targets), cur.substr(eq + 1),
                    cur.substr(0, eq + 1));
  }
  if (c.command == nullptr) {
    if (c.group.empty()) return Matching(FirstWords(specs), cur);
    return Matching(SecondWords(c.group, specs), cur);
  }
  if (c.command == &top) return {};
  if (spec.max_operands >= 0 && std::ssize(c.operands) >= spec.max_operands) return {};
  return Matching(ValuesOf(spec.operand_kind, spec.operand_choices, c, specs, targets), cur);
}

std::string BashCompletionScript() {
  return R"(# bash completion for benchmake. Load it with
#   source <(benchmake completion bash)
# or save it as ~/.local/share/bash-completion/completions/benchmake.
# The candidates come from `benchmake __complete WORD...` (the words up to the cursor).
_benchmake() {
  local line=${COMP_LINE:0:COMP_POINT}
  local -a words out
  read -ra words <<< "$line"
  if [[ ${#words[@]} -eq 0 || $line =~ [[:space:]]$ ]]; then words+=(""); fi
  local cur=${words[${#words[@]}-1]}
  local bin=${words[0]/#\~/$HOME}
  local IFS=$'\n'
  out=($("$bin" __complete "${words[@]:1}" 2>/dev/null))
  COMPREPLY=()
  case ${out[0]-} in
    :files) COMPREPLY=($(compgen -f -- "${cur##*=}")); compopt -o filenames 2>/dev/null ;;
    :dirs) COMPREPLY=($(compgen -d -- "${cur##*=}")); compopt -o filenames 2>/dev/null ;;
    *)
      # bash splits "--flag=value" at '=' (COMP_WORDBREAKS): it replaces only what follows.
      if [[ $cur == *=* && $COMP_WORDBREAKS == *=* ]]; then out=("${out[@]#"${cur%=*}="}"); fi
      COMPREPLY=($(compgen -W "${out[*]}" -- "${cur##*=}")) ;;
  esac
}
complete -F _benchmake benchmake
)";
}

std::string ZshCompletionScript() {
  return R"(#compdef benchmake
# zsh completion for benchmake. Load it with
#   source <(benchmake completion zsh)     (after compinit)
# or save it as _benchmake in a directory of $fpath.
# The candidates come from `benchmake __complete WORD...` (the words up to the cursor).
_benchmake() {
  local -a out
  out=("${(@f)$(${~words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  out=(${out:#})
  case ${out[1]-} in
    :files) compset -P '*='; _files ;;
    :dirs) compset -P '*='; _files -/ ;;
    *) (( ${#out} )) && compadd -- "${out[@]}" ;;
  esac
}
if [[ ${funcstack[1]-} == _benchmake ]]; then
  _benchmake "$@"
else
  compdef _benchmake benchmake
fi
)";
}

}  // namespace bm::cli
