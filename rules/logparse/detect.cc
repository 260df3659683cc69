// `log_format = "auto"`: the format recognised by the first line that only
// one format prints (log_parser.h, DetectLogFormat), then that format's
// parser. Also the hint a parser adds to its "no records" error when the log
// is in another format.
#include <fmt/format.h>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

struct Kind {
  std::string_view format;
  bool (*is)(std::string_view);
  std::string_view what;
};

// In the order DetectLogFormat documents: a format that wraps another's
// lines (FlagPerf around Megatron or DeepSpeed, Megatron-DeepSpeed's
// iteration lines beside DeepSpeed's) before the one it wraps; NeMo 2's
// ProgressPrinter lines before Megatron's, whose ` iteration N/M |` they contain.
constexpr Kind kKinds[] = {
    {"flagperf", IsFlagPerfSummaryLine, "FlagPerf's 'Tokens/p/s:' summary"},
    {"flagperf", IsFlagPerfEventLine, "a FlagPerf '[PerfLog] {\"event\": ...}' line"},
    {"mllog", IsMllogEventLine, "an MLPerf ':::MLLOG {...}' event"},
    {"nemo", IsNemoProgressLine, "a NeMo 2 ProgressPrinter line"},
    {"nemo", IsNemoBarLine, "a NeMo 1 training bar"},
    {"megatron", IsMegatronIterationLine, "a Megatron iteration line"},
    {"paddle", IsPaddleStepLine, "a PaddleNLP step line"},
    {"deepspeed", IsDeepSpeedLine,
     "a DeepSpeed step, ThroughputTimer, wall_clock_breakdown timer or fp16 overflow line"},
    {"trainer", IsTrainerDictLine, "a transformers Trainer log dict"},
    // After the others: a log any format above recognises keeps that format.
    {"torchtitan", IsTorchtitanStepLine, "a torchtitan 'step: N  loss: X  ...  tps: T' line"},
    {"nemo", IsNemoAutomodelLine, "a NeMo Automodel 'step N | epoch E | loss X | ...' line"},
    // Then the formats added last, so that a log an earlier release recognised keeps its format
    // (torchtune's `Step N | name:value` the loosest of all).
    {"nanotron", IsNanotronIterationLine,
     "a Nanotron 'iteration: N / M | consumed_tokens: ... | ...' line"},
    {"litgpt", IsLitgptLine,
     "a LitGPT 'iter I step S | loss train: X, ... | iter time: T ms' line"},
    {"torchtune", IsTorchtuneStepLine, "a torchtune 'Step N | loss:X lr:Y ...' metric line"},
    {"torchtune", IsTorchtuneBarLine, "a torchtune training bar 'E|S|Loss: X: ... n/total [...]'"},
    {"maxtext", IsMaxtextStepLine, "a MaxText 'completed step: N, seconds: S, ...' line"},
};

// The first line that is a Trainer dict but for its quotes: typographic ones (‘loss’, “loss”),
// which an editor or a chat put in place of Python's when the log was pasted
// (huggingface/transformers #33336). 0 when there is none.
int64_t TypographicDictLine(std::string_view text) {
  int64_t found = 0;
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (found) return;
    std::string_view t = Trim(line);
    if (!t.starts_with("{")) return;
    t = Trim(t.substr(1));
    for (std::string_view open : {"\u2018loss\u2019", "\u201closs\u201d"}) {
      if (t.starts_with(open)) found = no;
    }
  });
  return found;
}

// The header of a Jupyter notebook's training table copied as text ("Step\tTraining Loss",
// "Epoch  Training Loss  Validation Loss", as markdown "Step | Training Loss | reward | ..."): in
// a notebook transformers' NotebookProgressCallback draws an HTML table of the logs in place of
// ProgressCallback's dicts. 0 when there is none.
int64_t NotebookTableLine(std::string_view text) {
  int64_t found = 0;
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (found) return;
    std::string_view t = Trim(line);
    if (t.starts_with('|')) t = Trim(t.substr(1));
    for (std::string_view first : {"Step", "Epoch"}) {
      if (!t.starts_with(first)) continue;
      std::string_view rest = t.substr(first.size());
      const size_t cells = rest.find_first_not_of(" \t|");
      if (cells != 0 && cells != std::string_view::npos &&
          rest.substr(cells).starts_with("Training Loss"))
        found = no;
    }
  });
  return found;
}

// A notebook's HTML output exported as text: `<IPython.core.display.HTML object>` (nbconvert to
// markdown or a script's capture of an executed notebook), where NotebookProgressCallback's table
// was. 0 when there is none.
int64_t NotebookHtmlLine(std::string_view text) {
  int64_t found = 0;
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!found && Trim(line) == "<IPython.core.display.HTML object>") found = no;
  });
  return found;
}

// Why the Trainer's dicts are not read where the text is a pasted form of them.
std::string TypographicDictHint(std::string_view text) {
  if (const int64_t line = TypographicDictLine(text); line != 0) {
    return fmt::format(
        "; line {} is a Trainer log dict with typographic quotes (‘loss’) where Python prints "
        "'loss': the text was pasted through an editor that changed them; give the log as the "
        "run wrote it",
        line);
  }
  if (const int64_t line = NotebookTableLine(text); line != 0) {
    return fmt::format(
        "; line {} heads a Jupyter notebook's training table (Step, Training Loss: transformers' "
        "NotebookProgressCallback draws it in place of the log dicts): run the training as a "
        "script, whose output has the dicts",
        line);
  }
  if (const int64_t line = NotebookHtmlLine(text); line != 0) {
    return fmt::format(
        "; line {} is a Jupyter notebook's HTML output as text (<IPython.core.display.HTML "
        "object>: in a notebook transformers' NotebookProgressCallback draws its table of the "
        "logs as HTML in place of the log dicts): run the training as a script, whose output has "
        "the dicts",
        line);
  }
  return "";
}

}  // namespace

std::optional<Detected> DetectLogFormat(std::string_view text) {
  // The first line of the highest-ranked kind present.
  std::optional<Detected> found;
  size_t rank = std::size(kKinds);
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    for (size_t k = 0; k < rank; ++k) {
      if (kKinds[k].is(line)) {
        found = Detected{kKinds[k].format, no, kKinds[k].what};
        rank = k;
        break;
      }
    }
  });
  return found;
}

std::string OtherFormatHint(std::string_view text, std::string_view tried) {
  std::optional<Detected> d = DetectLogFormat(text);
  if (!d) return TypographicDictHint(text);
  if (d->format == tried) return "";
  return fmt::format("; line {} is {}: set log_format = \"{}\" (or \"auto\")", d->line, d->what,
                     d->format);
}

Result<ParsedLog> ParseAutoLog(std::string_view text, std::string_view name) {
  std::optional<Detected> d = DetectLogFormat(text);
  if (!d) {
    return Errorf(
        ErrorCode::kCorrupt,
        "{}: log_format = \"auto\" found none of these in {} lines: a Megatron iteration "
        "line, a NeMo 2 ProgressPrinter line or NeMo 1 training bar, DeepSpeed step, "
        "ThroughputTimer, wall_clock_breakdown timer or fp16 overflow lines, "
        "transformers Trainer log dicts, "
        "PaddleNLP step lines, MLPerf :::MLLOG events, FlagPerf's 'Tokens/p/s:' summary or "
        "'[PerfLog]' events, torchtitan 'step: N  loss: X  ...  tps: T' lines, NeMo Automodel "
        "'step N | epoch E | loss X | ...' lines, Nanotron "
        "'iteration: N / M | ... | lm_loss: X | ...' lines, LitGPT "
        "'iter I step S | loss train: X, ... | iter time: T ms' lines, torchtune "
        "'Step N | loss:X lr:Y ...' metric lines or training bars 'E|S|Loss: X: ...', MaxText "
        "'completed step: N, seconds: S, ...' lines{}",
        name, CountLines(text), TypographicDictHint(text));
  }
  const LogParser* parser = FindLogParser(d->format);
  BM_ASSIGN_OR_RETURN(ParsedLog log, parser->parse(text, name));
  log.format = std::string(d->format);
  log.notes.insert(log.notes.begin(), fmt::format("log_format auto: read as {} ({}:{} is {})",
                                                  d->format, name, d->line, d->what));
  return log;
}

}  // namespace bm::logparse
