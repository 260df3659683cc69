#include "rules/logparse/nemo_setup.h"

#include <optional>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// The number of ranks in the `[a, b, ...]` list after `at`; nullopt when there is none.
std::optional<int64_t> NemoGroupSize(std::string_view line, size_t at) {
  const size_t open = line.find('[', at);
  const size_t close = line.find(']', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
  std::string_view ranks = Trim(line.substr(open + 1, close - open - 1));
  if (ranks.empty() || !LeadingNumber(ranks)) return std::nullopt;
  int64_t n = 1;
  for (char c : ranks) n += c == ',' ? 1 : 0;
  return n;
}

}  // namespace

bool ReadNemoSetupLine(std::string_view line, int64_t no, ParsedLog& log) {
  struct Group {
    std::string_view marker;
    const char* fact;
  };
  constexpr Group kGroups[] = {{" has data parallel group :", "dp"},
                               {" has tensor model parallel group:", "tp"},
                               {" has pipeline model parallel group:", "pp"}};
  for (const Group& g : kGroups) {
    const size_t at = line.find(g.marker);
    if (at == std::string_view::npos) continue;
    if (std::optional<int64_t> n = NemoGroupSize(line, at + g.marker.size()))
      SetFact(log, g.fact, static_cast<double>(*n), no);
    return true;
  }
  constexpr std::string_view kMicro = "setting number of microbatches to constant ";
  if (size_t at = line.find(kMicro); at != std::string_view::npos) {
    if (std::optional<double> n = LeadingNumber(line.substr(at + kMicro.size())))
      SetFact(log, "gas", *n, no);
    return true;
  }
  constexpr std::string_view kMember = "Initializing distributed: GLOBAL_RANK: ";
  if (size_t at = line.find(kMember); at != std::string_view::npos) {
    const size_t slash = line.find('/', at);
    if (slash == std::string_view::npos) return true;
    if (std::optional<double> world = LeadingNumber(line.substr(slash + 1)))
      SetFact(log, "devices", *world, no);
    return true;
  }
  return false;
}

}  // namespace bm::logparse
