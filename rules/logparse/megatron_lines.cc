// Readers of Megatron's memory, parameter-count and validation lines (megatron_lines.h).
#include "rules/logparse/megatron_lines.h"

#include <limits>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {

namespace {

// The GiB figure printed as `NN.NNGB/` right after `key`.
std::optional<double> GiBAfter(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = Trim(line.substr(at + key.size()));
  size_t end = 0;
  std::optional<double> v = LeadingNumber(rest, &end);
  if (!v || !rest.substr(end).starts_with("GB/")) return std::nullopt;
  return v;
}

}  // namespace

std::optional<MemoryPeak> PrimusUsedMemory(std::string_view line) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::optional<double> hip = GiBAfter(line, "hip mem usage/free/total/usage_ratio:");
  std::optional<double> rocm_max = GiBAfter(line, " rocm max mem usage/usage_ratio:");
  if (rocm_max && (!hip || *rocm_max > *hip)) {
    return MemoryPeak{
        *rocm_max * kGiB,
        "rocm max mem usage (Primus: rocm-smi's used device memory of the fullest rank "
        "at the line, the largest; not a peak)"};
  }
  if (!hip) return std::nullopt;
  return MemoryPeak{*hip * kGiB,
                    "hip mem usage (Primus: torch.cuda.mem_get_info's used memory of the printing "
                    "rank's device at the line, the largest; not a peak)"};
}

std::optional<double> MemoryField(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  return ParseNumber(rest.substr(0, rest.find('|')));
}

namespace {

// One rank's report_memory print.
std::optional<MemoryPeak> SingleRankMemoryReport(std::string_view line) {
  if (line.find("memory (MB)") != std::string_view::npos) {  // Megatron-LM: MiB
    if (std::optional<double> mb = MemoryField(line, "max reserved:"))
      return MemoryPeak{*mb * 1024.0 * 1024.0, "max reserved (Megatron report_memory)"};
    // Megatron-LM before 51a2e6b (September 2020): torch's max_memory_cached, as
    // max_memory_reserved was called then.
    if (std::optional<double> mb = MemoryField(line, "max cached:"))
      return MemoryPeak{*mb * 1024.0 * 1024.0, "max cached (Megatron report_memory of 2019-2020)"};
    if (std::optional<double> mb = MemoryField(line, "max allocated:"))
      return MemoryPeak{*mb * 1024.0 * 1024.0, "max allocated (Megatron report_memory)"};
  } else if (line.find("memory (GB)") != std::string_view::npos) {  // Megatron-Bridge: 1e9 bytes
    if (std::optional<double> gb = MemoryField(line, "mem-max-reserved-gigabytes:"))
      return MemoryPeak{*gb * 1e9, "mem-max-reserved-gigabytes (Megatron-Bridge report_memory)"};
    if (std::optional<double> gb = MemoryField(line, "mem-max-allocated-gigabytes:"))
      return MemoryPeak{*gb * 1e9, "mem-max-allocated-gigabytes (Megatron-Bridge report_memory)"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemoryPeak> MemoryReport(std::string_view line) {
  // Every rank of a data-parallel group prints its own report at once: one rank's print can reach
  // the terminal before another's newline, gluing two reports (`... | max reserved:
  // 21534.0[Rank 0] (after 1 iterations) memory (MB) | ...`). Each is read; the larger is the peak.
  constexpr std::string_view kRank = "[Rank ";
  const size_t first = line.find(kRank);
  const size_t second = first == std::string_view::npos ? first : line.find(kRank, first + 1);
  if (second == std::string_view::npos) return SingleRankMemoryReport(line);
  std::optional<MemoryPeak> head = SingleRankMemoryReport(line.substr(0, second));
  std::optional<MemoryPeak> tail = MemoryReport(line.substr(second));
  if (!head || (tail && tail->bytes > head->bytes)) return tail;
  return head;
}

bool ParameterLine(std::string_view line, std::vector<int>* rank, double* count) {
  constexpr std::string_view kKey = "number of parameters on (";
  constexpr std::string_view kRank = ") model parallel rank (";
  // Megatron-LM before 52a5f2f (October 2020), model (tensor) parallelism only:
  // ` > number of parameters on model parallel rank 1: 178100224`.
  constexpr std::string_view kOld = "number of parameters on model parallel rank ";
  if (size_t old = line.find(kOld); old != std::string_view::npos) {
    size_t end = 0;
    std::string_view rest = line.substr(old + kOld.size());
    std::optional<int64_t> r = WholeCount(LeadingNumber(rest, &end));
    if (!r || *r > std::numeric_limits<int>::max() || end >= rest.size() || rest[end] != ':')
      return false;
    std::optional<double> n = ParseNumber(rest.substr(end + 1));
    if (!n) return false;
    *rank = {static_cast<int>(*r)};
    *count = *n;
    return true;
  }
  size_t at = line.find(kKey);
  if (at == std::string_view::npos) return false;
  size_t names_end = line.find(kRank, at);
  if (names_end == std::string_view::npos) return false;
  size_t open = names_end + kRank.size();
  size_t close = line.find(')', open);
  size_t colon = close == std::string_view::npos ? close : line.find(':', close);
  if (colon == std::string_view::npos) return false;
  std::optional<double> n = ParseNumber(line.substr(colon + 1));
  if (!n) return false;
  rank->clear();
  std::string_view tuple = line.substr(open, close - open);
  while (true) {
    size_t comma = tuple.find(',');
    std::optional<int64_t> r = WholeCount(ParseNumber(tuple.substr(0, comma)));
    if (!r || *r > std::numeric_limits<int>::max()) return false;
    rank->push_back(static_cast<int>(*r));
    if (comma == std::string_view::npos) break;
    tuple.remove_prefix(comma + 1);
  }
  *count = *n;
  return true;
}

bool ParameterLinesMissRanks(const std::set<std::vector<int>>& ranks, std::optional<double> tp,
                             std::optional<double> pp) {
  std::set<int> tensor, pipeline;
  for (const std::vector<int>& r : ranks) {
    if (r.empty()) continue;
    tensor.insert(r.front());
    pipeline.insert(r.back());
  }
  return (tp && static_cast<double>(tensor.size()) < *tp) ||
         (pp && static_cast<double>(pipeline.size()) < *pp);
}

std::optional<EvalLine> ReadEvalLine(std::string_view line) {
  // MindSpeed-MM's FSDP trainer (mindspeed_mm/fsdp/train/train_engine.py `_run_validation`):
  // ` [ts] ** validation after iteration 200 ** | validation steps: 10 | validation loss: x |`.
  constexpr std::string_view kAfter = "** validation after iteration ";
  if (size_t a = line.find(kAfter); a != std::string_view::npos) {
    std::optional<int64_t> step = WholeCount(LeadingNumber(line.substr(a + kAfter.size())));
    std::optional<double> loss = MemoryField(line, "validation loss:");
    if (!step || !loss) return std::nullopt;
    return EvalLine{"", *step, *loss};
  }
  // GPT-NeoX (megatron/training.py `evaluate_and_print_results`): ` {chart_name} results at
  // {prefix} | ` with chart_name "validation" and, every eval_interval, prefix "iteration N",
  // then `{key} value: {v:.6E} | ` for each key, lm_loss first. After training the prefix is
  // "the end of training for val data" (no iteration: not read), and the test set's chart "test".
  constexpr std::string_view kResults = "validation results at iteration ";
  if (size_t r = line.find(kResults); r != std::string_view::npos) {
    std::optional<int64_t> step = WholeCount(LeadingNumber(line.substr(r + kResults.size())));
    std::optional<double> loss = MemoryField(line.substr(r), " value:");
    if (!step || !loss) return std::nullopt;
    return EvalLine{"", *step, *loss};
  }
  constexpr std::string_view kAt = " loss at iteration ";
  size_t at = line.find(kAt);
  size_t v = line.find("validation");
  if (at == std::string_view::npos || v == std::string_view::npos || v > at) return std::nullopt;
  if (line.find(" on test set", at) != std::string_view::npos) return std::nullopt;
  size_t end = 0;
  std::optional<int64_t> step = WholeCount(LeadingNumber(line.substr(at + kAt.size()), &end));
  // `lm loss value: x |`; Megatron-LM of 2019 (pretrain_gpt2.py evaluate_and_print_results,
  // abe36e2 to 73af129): `| LM loss: x | LM PPL: y`.
  constexpr std::string_view kValue = " value:", k2019 = "| LM loss:";
  size_t value = line.find(kValue, at);
  size_t key_size = kValue.size();
  if (value == std::string_view::npos) {
    value = line.find(k2019, at);
    key_size = k2019.size();
  }
  if (!step || value == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(value + key_size);
  std::optional<double> loss = ParseNumber(rest.substr(0, rest.find('|')));
  if (!loss) return std::nullopt;
  return EvalLine{NoteText(line.substr(v + 10, at - v - 10)), *step, *loss};
}

}  // namespace bm::logparse
