#include "rules/logparse/torchtitan_setup.h"

#include <fmt/format.h>

#include <string>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// The number right after `phrase` in line ("local batch size " -> 8); nullopt when the phrase
// is absent, kCorrupt when it is there without a number after it.
Result<std::optional<double>> TitanPhraseNumber(std::string_view line, std::string_view phrase,
                                                int64_t no, std::string_view name) {
  size_t at = line.find(phrase);
  if (at == std::string_view::npos) return std::optional<double>();
  std::string_view rest = line.substr(at + phrase.size());
  std::optional<double> v = GroupedNumber(rest);
  if (!v) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is followed by '{}', not a number", name, no,
                  Trim(phrase), Trim(rest.substr(0, rest.find(','))));
  }
  return v;
}

// "Building 1-D device mesh with ['dp_shard', 'tp'], [4, 2]": the degrees by name.
bool TitanMeshDims(std::string_view line, double* world, double* dp, double* tp, double* pp) {
  size_t at = line.find("-D device mesh with [");
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + 20);  // from the names' '['
  size_t close = rest.find(']');
  if (close == std::string_view::npos) return false;
  std::string_view names = rest.substr(1, close - 1);
  std::string_view dims = rest.substr(close + 1);
  size_t open = dims.find('[');
  if (open == std::string_view::npos) return false;
  dims.remove_prefix(open + 1);
  *world = *dp = *tp = *pp = 1;
  while (true) {
    size_t end = 0;
    std::optional<double> d = LeadingNumber(dims, &end);
    size_t q1 = names.find('\'');
    if (!d || q1 == std::string_view::npos) break;
    size_t q2 = names.find('\'', q1 + 1);
    if (q2 == std::string_view::npos) return false;
    std::string_view dim_name = names.substr(q1 + 1, q2 - q1 - 1);
    *world *= *d;
    if (dim_name.starts_with("dp")) *dp *= *d;
    if (dim_name == "tp") *tp *= *d;
    if (dim_name == "pp") *pp *= *d;
    names.remove_prefix(q2 + 1);
    dims.remove_prefix(end);
    size_t comma = dims.find(',');
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return true;
}

}  // namespace

Result<std::optional<int64_t>> ReadTorchtitanSetupLine(std::string_view line, int64_t no,
                                                       std::string_view name, ParsedLog& log,
                                                       TorchtitanSetup& setup) {
  constexpr std::string_view kStarts = "Training starts at step ";
  const bool starts = line.find(kStarts) != std::string_view::npos;
  const bool trainer = line.find("Trainer is initialized with ") != std::string_view::npos;
  if (starts || trainer) {
    // The batch, in either statement (older runs state it on the "Training starts" line).
    struct Phrase {
      std::string_view text;
      const char* fact;
    };
    constexpr Phrase kPhrases[] = {{"local batch size ", "lbs"},
                                   {"global batch size ", "gbs"},
                                   {"gradient accumulation steps ", "gas"},
                                   {"sequence length ", "mpe"},
                                   {"maximum context length ", "mpe"}};
    bool any = false;
    for (const Phrase& p : kPhrases) {
      BM_ASSIGN_OR_RETURN(std::optional<double> v, TitanPhraseNumber(line, p.text, no, name));
      if (!v) continue;
      SetFact(log, p.fact, *v, no);
      any = true;
    }
    // "8192 tokens per DP rank, 65536 tokens per train step": the number before the phrase.
    size_t at = line.find(" tokens per train step");
    if (at != std::string_view::npos && !setup.tokens_per_step) {
      size_t from = line.rfind(' ', at - 1);
      std::optional<double> v = from == std::string_view::npos
                                    ? std::nullopt
                                    : GroupedNumber(line.substr(from + 1, at - from - 1));
      if (!v) {
        return Errorf(ErrorCode::kCorrupt, "{}:{}: no number before 'tokens per train step'", name,
                      no);
      }
      setup.tokens_per_step = Fact{*v, no};
      any = true;
    }
    if (any && setup.trainer_line == 0) setup.trainer_line = no;
    if (starts) {
      BM_ASSIGN_OR_RETURN(std::optional<double> step, TitanPhraseNumber(line, kStarts, no, name));
      if (!WholeCount(*step)) {
        return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is followed by {}, not a step", name, no,
                      Trim(kStarts), *step);
      }
      return WholeCount(*step);
    }
    return std::optional<int64_t>();
  }
  double world = 0, dp = 0, tp = 0, pp = 0;
  constexpr std::string_view kParallelism = "Building device mesh with parallelism: ";
  if (size_t at = line.find(kParallelism); at != std::string_view::npos) {
    std::string_view rest = line.substr(at + kParallelism.size());
    world = dp = 1;
    for (std::string_view key : {"pp", "dp_replicate", "dp_shard", "cp", "tp"}) {
      std::optional<double> v = NumberAfter(rest, key, "=");
      if (!v || *v < 1) {
        return Errorf(ErrorCode::kCorrupt, "{}:{}: the device mesh line gives no degree '{}'", name,
                      no, key);
      }
      world *= *v;
      if (key.starts_with("dp")) dp *= *v;
      if (key == "tp") tp = *v;
      if (key == "pp") pp = *v;
    }
  } else if (!TitanMeshDims(line, &world, &dp, &tp, &pp)) {
    constexpr std::string_view kSize = " size: ";
    size_t at = line.find(" total parameters");
    size_t size = at == std::string_view::npos ? at : line.rfind(kSize, at);
    if (size != std::string_view::npos && line.find("Model ") < size) {
      if (std::optional<double> n = GroupedNumber(line.substr(size + kSize.size())))
        SetFact(log, "parameters", *n, no);
    }
    return std::optional<int64_t>();
  }
  if (setup.mesh_line == 0) {
    setup.mesh_line = no;
    SetFact(log, "devices", world, no);
    SetFact(log, "dp", dp, no);
    SetFact(log, "tp", tp, no);
    SetFact(log, "pp", pp, no);
  }
  return std::optional<int64_t>();
}

}  // namespace bm::logparse
