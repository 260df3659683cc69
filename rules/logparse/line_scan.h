// Small text helpers the log parsers share (log_parser.h): lines, numbers as
// Python prints them, the dotted argument lines Megatron and DeepSpeed print
// at start-up, and keeping an iteration series ascending.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

std::string_view Trim(std::string_view s);

// o[key] when o is a JSON object holding a number there (MLPerf's and FlagPerf's events).
std::optional<double> JsonNumber(const nlohmann::json& o, const char* key);

// Text of the log for a note or a label (a garbled MLPerf key, a validation set's name, a device's
// name), which metrics.json holds: as the contents of a JSON string (quotes, backslashes and
// control characters escaped), its bytes that are no UTF-8 as U+FFFD, so that writing metrics.json
// cannot throw (nlohmann's type_error 316).
std::string NoteText(std::string_view text);

// Calls fn(line, line_no) for every line of text ("\n"-separated, 1-based
// numbers). A line with carriage returns inside (tqdm redrawing its bar, then
// printing a record over it) is read as its "\r"-separated segments, each
// with the line's number; empty segments are skipped, except that a line
// that is empty altogether is passed once. Returns the number of lines.
template <class Fn>
int64_t ForEachLine(std::string_view text, Fn&& fn) {
  int64_t no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    ++no;
    if (line.find('\r') == std::string_view::npos) {
      fn(line, no);
    } else {
      size_t from = 0;
      while (from <= line.size()) {
        size_t cr = line.find('\r', from);
        if (cr == std::string_view::npos) cr = line.size();
        if (cr > from) fn(line.substr(from, cr - from), no);
        from = cr + 1;
      }
    }
    pos = end + 1;
  }
  return no;
}

// The number of lines ForEachLine reads.
int64_t CountLines(std::string_view text);

// text without its terminal control sequences (CSI: ESC '[', parameter bytes, a final byte), such
// as the colour codes a colorlog logger wraps each line in (`\x1b[32m[...] [    INFO]\x1b[0m -
// loss: 2.6, ...\x1b[0m`); nullopt when text has none. Line breaks are kept, so line numbers
// do not change.
std::optional<std::string> WithoutTerminalEscapes(std::string_view text);

// The whole of s (spaces around it ignored) as a number: 12, -3.5,
// 1.234560E+00, nan, inf, NAN (Python's %E of a NaN). nullopt otherwise.
std::optional<double> ParseNumber(std::string_view s);

// The number at the start of s (after spaces), and where it ends; nullopt
// when s does not start with one.
std::optional<double> LeadingNumber(std::string_view s, size_t* end = nullptr);

// v as a step or count: a whole number from 0 to 2^53 (up to where a double holds every
// integer). nullopt for a fraction, a negative number, nan, inf or anything larger (a mangled
// `iteration 99999999999999999999/`), which a cast to int64_t would make undefined: the line
// that printed it is then read as a line of no record, as one whose number does not parse.
std::optional<int64_t> WholeCount(double v);
std::optional<int64_t> WholeCount(std::optional<double> v);

// A number that may be printed with thousands separators ("8,030,261,248", "5,756": a comma
// between digits) at the start of s (after spaces), and where it ends; nullopt when s does not
// start with one.
std::optional<double> GroupedNumber(std::string_view s, size_t* end = nullptr);

// A number with an SI prefix and a unit as trainers print rates and sizes: DeepSpeed's flops
// profiler (number_to_string: "2.35 TFLOPS", "487.61 ms", "382.64 G", "-1.16192e+18 uFLOPS"),
// GPT-NeoX's human_readable_flops ("112.9TFLOPS", "999.9GFLOPS", "0.0" below 1 FLOP/s): the number
// times its prefix (P T G M K k m u, E for 1e18; none: 1), the space before the prefix optional,
// then `unit` ("FLOPS", "s", or "" for a bare count). nullopt when the text is not one, or when a
// letter or digit follows the unit (another rank's text glued on).
std::optional<double> SiValue(std::string_view text, std::string_view unit);

// The value of an argument line as Megatron (`  seq_length ........ 4096`)
// and DeepSpeed (`  train_batch_size ..... 8`, or without dots when the name
// is long: `  train_micro_batch_size_per_gpu  1`) print them, anywhere in the
// line (after a timestamp or logger prefix): two spaces, the exact name, a
// space, dots (possibly none), a space, the value. nullopt when line is not
// that argument's line, and for Primus's own aligned print of the same names
// (`  bf16          : True (bool)`, its `log_dict_aligned`: a colon, and the
// value's type after it), which is not read.
std::optional<std::string_view> DottedArg(std::string_view line, std::string_view name);

// Past the spaces at and after p in s.
size_t SkipSpaces(std::string_view s, size_t p);

// Where `key` occurs in line at or after `from`, case-insensitively; npos if not.
size_t FindNoCase(std::string_view line, std::string_view key, size_t from = 0);

// Position just after `key`, optional spaces and quotes, and one of `seps`
// (e.g. "=:"), searching case-insensitively from `from`; npos if absent.
// "'loss': 2.3" with key "loss" and seps ":" gives the position of " 2.3".
// The key is a whole name (NameStartsAt).
size_t FindKeyValue(std::string_view line, std::string_view key, std::string_view seps,
                    size_t from = 0);

// Whether a name starting with a letter, digit or '_' found at `at` in line starts there: it is
// not the end of a longer one ("kl_loss", "pg_loss") nor a name in another's namespace
// ("actor/loss", "training/global_step": veRL's metrics); a '/' after a value
// ("micro_step=10/global_step=10", DeepSpeed's timer line) separates two names.
bool NameStartsAt(std::string_view line, size_t at);

// Whether a line is an excerpt's mark of lines left out, as a README or notes page quotes a log:
// `...`, `......`, `…`, `[...]`, `(...)`, `<snip>` (spaces around it ignored).
bool IsElisionMark(std::string_view line);

// Whether `line`, a view into `text`, is its last line and ends without a newline: a log cut off
// there, whose last field may be cut short. A line that is no view into `text` (a joined copy)
// never is.
bool IsCutLastLine(std::string_view text, std::string_view line);

// The `key: value` fields of a record's text, separated by `sep` (" | ", ", "): fn(key, value),
// both trimmed, for each; a field without ": " is skipped, and so is the last one where the
// record is a cut-off last line (`cut`: IsCutLastLine), which may be cut short. fn returns
// whether to go on.
template <typename Fn>
void ForEachKeyValue(std::string_view fields, std::string_view sep, bool cut, Fn&& fn) {
  while (!fields.empty()) {
    const size_t end = fields.find(sep);
    if (end == std::string_view::npos && cut) return;
    std::string_view field = Trim(fields.substr(0, end));
    fields = end == std::string_view::npos ? std::string_view() : fields.substr(end + sep.size());
    const size_t colon = field.find(": ");
    if (colon == std::string_view::npos) continue;
    if (!fn(field.substr(0, colon), Trim(field.substr(colon + 2)))) return;
  }
}

// Appends `it` keeping the series strictly ascending: a record equal to the
// last one (another rank's copy) is dropped; any other record for a step at
// or below the last is a resumed run's, and replaces the records from that
// step on (counted in *restarts).
void AddIteration(std::vector<Iteration>& its, Iteration it, int64_t* restarts);

// Fills each record's span from the gaps between steps (the first: the gap to
// the next, or its step when it is alone, at most its step), at least 1.
void FillSpansFromGaps(std::vector<Iteration>& its);

// Records a fact unless the log already stated it (the first statement wins:
// every rank prints the same).
void SetFact(ParsedLog& log, const char* name, double value, int64_t line);

// The data-parallel ranks a training summary implies (transformers' and PaddleNLP's `***** Running
// training *****`): its "Total train batch size (w. parallel, distributed & accumulation)" is the
// per-device batch x the accumulation steps x the ranks that read their own data (the Trainer's
// world_size // (TP x CP x SP), PaddleNLP's dataset_world_size: DP x sharding), so where the facts
// gbs, lbs and gas are stated and dp is not, dp = gbs / (lbs x gas) when whole, with a note that
// the devices are taken to be those ranks.
void DataParallelFromTotalBatch(ParsedLog& log, std::string_view name);

// A config print's key (its section path) and the fact it states (SetConfigFact's `fact`).
struct ConfigFactKey {
  std::string_view path;
  const char* fact;
};

// A fact a config print states (`source`, e.g. "Megatron-Bridge's config print", under `key`):
// recorded unless the log stated it before; a different earlier value is kept, and a note names
// both lines ("mpe: NAME:2 says 4096, SOURCE NAME:6 says 2048 (KEY): 4096 kept").
void SetConfigFact(ParsedLog& log, std::string_view name, const char* fact, double value,
                   int64_t line, std::string_view source, std::string_view key);
// The same for the precision ("bf16", "fp16", "fp32"): set where the log states none, else a note
// where it differs.
void SetConfigPrecision(ParsedLog& log, std::string_view name, std::string_view precision,
                        int64_t line, std::string_view source, std::string_view key);

// The number after `key` + optional spaces/quotes + one of `seps`
// (case-insensitive), a quoted number ('10.46', as transformers prints its
// log values), `tensor(` or `[` before it skipped; nullopt otherwise.
std::optional<double> NumberAfter(std::string_view line, std::string_view key,
                                  std::string_view seps);

}  // namespace bm::logparse
