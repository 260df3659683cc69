#include "cli/man_page.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <sstream>

namespace bm::cli {
namespace {

struct Entry {
  std::string_view name;
  std::string_view text;
};

// The files benchmake reads and writes (engine/workspace.h, cache/cache.h).
constexpr Entry kFiles[] = {
    {"BENCHFILE.toml",
     "The targets: [target.NAME] tables with a rule and its parameters; "
     "[benchmake] workspace settings (cache_dir, jobs, gpus); "
     "[benchmake.cache] the remote cache. Its directory is the workspace."},
    {"out/NAME/", "The outputs of target NAME, hard links into the cache."},
    {".benchmake/",
     "The workspace's state: build.ninja, the key material and output digests "
     "of every target (t/), the last run's log of each step (log/NAME.log), "
     "the workspace lock. Removed by `benchmake clean`."},
    {"~/.cache/benchmake/",
     "The local cache, shared by every workspace of the user: blobs by "
     "content digest (cas/) and action records (ac/). Moved by "
     "$BENCHMAKE_CACHE_DIR or $XDG_CACHE_HOME, or by [benchmake] "
     "cache_dir."},
};

// The environment variables benchmake reads (docs/ARCHITECTURE.md, "Environment").
constexpr Entry kEnvironment[] = {
    {"BENCHMAKE_CACHE_DIR", "The local cache directory."},
    {"XDG_CACHE_HOME",
     "The local cache is $XDG_CACHE_HOME/benchmake when BENCHMAKE_CACHE_DIR "
     "is unset."},
    {"BENCHMAKE_REMOTE_CACHE",
     "The remote cache, URL|key=value|..., over [benchmake.cache]; "
     "off disables it (docs/REMOTE_CACHE.md)."},
    {"BENCHMAKE_COLOR",
     "auto, always or never: the default of --color. `benchmake build` sets "
     "it for the steps that ninja runs."},
    {"NO_COLOR",
     "When set and not empty, no color unless --color says otherwise "
     "(no-color.org)."},
    {"BENCHMAKE_GPUS",
     "The number of GPUs, when the BENCHFILE does not say and nvidia-smi is "
     "missing."},
    {"BENCHMAKE_GPU_LOCK_DIR",
     "Where the per-GPU lock files live "
     "(default /tmp/benchmake-gpus-$UID)."},
    {"BENCHMAKE_PLATFORM", "JSON platform facts replacing `benchmake-train --probe` (tests)."},
    {"BENCHMAKE_RUN_ID",
     "Set by `benchmake build` for its steps: they share one verdict on a "
     "failing remote cache."},
};

constexpr Entry kExitStatus[] = {
    {"0", "Success."},
    {"1",
     "A failure: a step failed, a corrupt cache entry was found, two runs are not "
     "aligned (compare), a file could not be written."},
    {"2",
     "Bad input: an unknown command, flag or target, a malformed BENCHFILE, a wrong "
     "operand count."},
};

// "\fB\-j\fR, \fB\-\-jobs\fR \fIN\fR"
std::string FlagTag(const FlagSpec& f) {
  std::string tag;
  if (!f.short_name.empty() && f.short_name != f.name) {
    tag = fmt::format("\\fB{}\\fR, ", RoffEscape(f.short_name));
  }
  tag += fmt::format("\\fB{}\\fR", RoffEscape(f.name));
  if (f.takes_value()) tag += fmt::format(" \\fI{}\\fR", RoffEscape(f.value_name));
  return tag;
}

void AppendManFlags(std::string& out, const std::vector<FlagSpec>& flags) {
  for (const FlagSpec& f : flags) {
    out += ".TP\n" + FlagTag(f) + "\n" + RoffEscape(f.help);
    out += ".";
    if (!f.default_text.empty()) out += " Default: " + RoffEscape(f.default_text) + ".";
    out += "\n";
  }
}

// Paragraphs separated by blank lines → .PP-separated body text.
void AppendParagraphs(std::string& out, std::string_view text) {
  std::istringstream in{std::string(text)};
  bool first = true;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (!first) out += ".PP\n";
    out += RoffEscape(line) + "\n";
    first = false;
  }
}

void AppendEntries(std::string& out, const Entry* begin, const Entry* end, bool bold) {
  for (const Entry* e = begin; e != end; ++e) {
    out += fmt::format(".TP\n{}{}\\fR\n{}\n", bold ? "\\fB" : "\\fI", RoffEscape(e->name),
                       RoffEscape(e->text));
  }
}

void AppendCommand(std::string& out, const CommandSpec& s) {
  out += fmt::format(".SS \"{}\"\n", RoffEscape(s.name));
  out += fmt::format(".B benchmake {}\n", RoffEscape(s.name));
  out += "[\\fIOPTIONS\\fR]";
  if (!s.operands.empty()) out += " " + RoffEscape(s.operands);
  out += "\n.PP\n";
  AppendParagraphs(out, s.description.empty() ? std::string(s.summary) : s.description);
  if (!s.flags.empty()) {
    out += ".PP\nOptions:\n.RS\n";
    AppendManFlags(out, s.flags);
    out += ".RE\n";
  }
  if (!s.examples.empty()) {
    out += ".PP\nExamples:\n.RS\n";
    for (const Example& e : s.examples) {
      out += fmt::format(".TP\n\\f(CW{}\\fR\n{}\n", RoffEscape(e.command), RoffEscape(e.what));
    }
    out += ".RE\n";
  }
}

// The UTF-8 sequence at the start of `text` as groff's \[uXXXX]
// (groff_char(7)), appended to `out`; its length in bytes, or nullopt for
// ASCII or a malformed sequence. Raw bytes above 0x7F are no roff input:
// groff warns "invalid input character" unless preconv runs first.
std::optional<size_t> AppendUnicodeEscape(std::string_view text, std::string& out) {
  const auto lead = static_cast<unsigned char>(text[0]);
  // A lead byte 110xxxxx, 1110xxxx or 11110xxx, then 1 to 3 bytes 10xxxxxx.
  const size_t extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (extra == 0 || extra >= text.size()) return std::nullopt;
  uint32_t code = lead & (0x3F >> extra);
  for (size_t k = 1; k <= extra; ++k) {
    const auto cont = static_cast<unsigned char>(text[k]);
    if ((cont & 0xC0) != 0x80) return std::nullopt;
    code = (code << 6) | (cont & 0x3F);
  }
  out += fmt::format("\\[u{:04X}]", code);
  return extra + 1;
}

}  // namespace

std::string RoffEscape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (std::optional<size_t> length = AppendUnicodeEscape(text.substr(i), out)) {
      i += *length - 1;
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string ManPage(const std::vector<const CommandSpec*>& specs, const CommandSpec& top,
                    std::string_view version) {
  std::string out = fmt::format(
      ".\\\" Generated by `benchmake __man` from the command tables (cli/); do not edit.\n"
      ".TH BENCHMAKE 1 \"\" \"benchmake {}\" \"User Commands\"\n"
      ".nh\n.ad l\n"
      ".SH NAME\nbenchmake \\- make for AI training benchmarks\n"
      ".SH SYNOPSIS\n.B benchmake\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n"
      ".SH DESCRIPTION\n"
      "benchmake treats AI training benchmarks as build targets. BENCHFILE.toml declares "
      "them \\(em dataset download, tokenization, pretraining, fine\\-tuning, evaluation "
      "\\(em and \\fBbenchmake build\\fR brings them up to date: it hashes every input, "
      "restores every step whose result is in the cache (local or remote), and runs only "
      "the stale ones, through \\fBninja\\fR(1). Reports show what benchmark suites "
      "report: tokens per device per second, MFU, memory, loss, accuracy.\n"
      ".PP\n"
      "\\fBbenchmake help\\fR \\fICOMMAND\\fR and \\fBbenchmake\\fR \\fICOMMAND\\fR "
      "\\fB\\-\\-help\\fR print the part of this page on one command.\n",
      RoffEscape(version));
  out += ".SH OPTIONS\nBefore the command:\n";
  AppendManFlags(out, top.flags);
  out += ".PP\nTaken by every command, before or after its name:\n";
  AppendManFlags(out, CommonFlags());
  out += ".SH COMMANDS\n";
  for (const CommandSpec* s : specs) {
    if (!s->hidden) AppendCommand(out, *s);
  }
  out += ".SH FILES\n";
  AppendEntries(out, std::begin(kFiles), std::end(kFiles), false);
  out += ".SH ENVIRONMENT\n";
  AppendEntries(out, std::begin(kEnvironment), std::end(kEnvironment), true);
  out += ".SH EXIT STATUS\n";
  AppendEntries(out, std::begin(kExitStatus), std::end(kExitStatus), true);
  out +=
      ".SH SHELL COMPLETION\n"
      "bash: \\f(CWsource <(benchmake completion bash)\\fR; zsh: \\f(CWsource <(benchmake "
      "completion zsh)\\fR after \\fBcompinit\\fR.\n"
      ".SH SEE ALSO\n\\fBninja\\fR(1), \\fBbenchmake\\-train\\fR, and the project's docs/: "
      "BENCHFILE.md, REPORTS.md, METRICS.md, REMOTE_CACHE.md, TRAINER.md.\n";
  return out;
}

}  // namespace bm::cli
