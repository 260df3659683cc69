// Readers of the Megatron lines other than the iteration line's fields (megatron.cc reads the
// log; its top comment says what each line is): `report_memory`'s peak, Primus's device memory in
// use, the parameter-count lines, the validation lines, and a `key: value |` field's number.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bm::logparse {

// Primus's device memory in use (training_log patch MemoryStatsExtension, GiB printed as GB),
// the larger of `hip mem usage/free/total/usage_ratio: 153.81GB/102.17GB/255.98GB/60.09%`
// (torch.cuda.mem_get_info of the printing rank's device) and, where rocm-smi is queried, `|
// rank-3 rocm max mem usage/usage_ratio: 172.64GB/59.95%` (the largest rocm-smi figure of all
// ranks), in bytes, with what it is; nullopt on any other line.
struct MemoryPeak {
  double bytes = 0;
  const char* source = "";
};
std::optional<MemoryPeak> PrimusUsedMemory(std::string_view line);

// The number between `key` and the next '|' ("| max reserved: 42000.0" -> 42000.0); nullopt
// when the line has no such key or no number there.
std::optional<double> MemoryField(std::string_view line, std::string_view key);

// A report_memory line's peak in bytes and what it is: the max reserved figure where the line
// prints one (`max cached` before September 2020), else the max allocated one (Megatron-LM's
// `memory (MB)`, MiB; Megatron-Bridge's `memory (GB)`, 1e9 bytes); of a line that holds several
// ranks' reports glued together (one's print without its newline before the next), the largest.
// nullopt for any other line.
std::optional<MemoryPeak> MemoryReport(std::string_view line);

// " > number of parameters on (tensor, pipeline) model parallel rank (0, 1): 209445120", and any
// other tuple of rank names, or 2019-2020's " > number of parameters on model parallel rank 1:
// 178100224" (rank {1}): the ranks and the count; false for any other line.
bool ParameterLine(std::string_view line, std::vector<int>* rank, double* count);

// Whether the parameter lines read (their rank tuples: tensor rank first, pipeline rank last)
// leave out some of the tensor or pipeline ranks the argument block states (`tp`, `pp`): their
// sum is then part of the model only (a launcher that shows one rank's output, as torchrun's
// `--local-ranks-filter 0`, prints pipeline stage 0's count alone).
bool ParameterLinesMissRanks(const std::set<std::vector<int>>& ranks, std::optional<double> tp,
                             std::optional<double> pp);

// ` validation loss at iteration 200 | lm loss value: 6.496762E+00 | lm loss PPL: ... |`
// (evaluate_and_print_results; `validation-NAME loss at` with several validation sets; `... at
// iteration 1000 on validation set` after training), GPT-NeoX's ` validation results at
// iteration 100 | lm_loss value: 6.912345E+00 | lm_loss_ppl value: ... |` and MindSpeed-MM's
// ` ** validation after iteration 200 ** | validation steps: 10 | validation loss: x |`: the set
// ("", "-NAME"), the step and the (first) loss's value. nullopt for any other line, the test
// set's included.
struct EvalLine {
  std::string set;  // as NoteText
  int64_t step = 0;
  double value = 0;
};
std::optional<EvalLine> ReadEvalLine(std::string_view line);

}  // namespace bm::logparse
