#include "rules/logparse/trainer_metrics_block.h"

#include <cctype>
#include <string>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// `0:09:16.03`, `1 day, 2:03:04.50` (Python's str of a timedelta, hundredths appended): seconds.
std::optional<double> MetricsBlockSeconds(std::string_view v) {
  double days = 0;
  if (size_t comma = v.find(", "); comma != std::string_view::npos) {
    size_t end = 0;
    std::optional<double> d = LeadingNumber(v, &end);
    if (!d || v.substr(end, 4) != " day") return std::nullopt;
    days = *d;
    v = v.substr(comma + 2);
  }
  const size_t c1 = v.find(':'), c2 = v.rfind(':');
  if (c1 == std::string_view::npos || c1 == c2) return std::nullopt;
  std::optional<double> h = ParseNumber(v.substr(0, c1));
  std::optional<double> m = ParseNumber(v.substr(c1 + 1, c2 - c1 - 1));
  std::optional<double> s = ParseNumber(v.substr(c2 + 1));
  if (!h || !m || !s) return std::nullopt;
  return days * 86400 + *h * 3600 + *m * 60 + *s;
}

// "  train_runtime            = 0:09:16.03" (a prefix before the key allowed): key and value.
std::optional<std::pair<std::string_view, std::string_view>> MetricsBlockEntry(
    std::string_view line) {
  const size_t eq = line.find(" = ");
  if (eq == std::string_view::npos) return std::nullopt;
  std::string_view key = Trim(line.substr(0, eq));
  key = key.substr(key.find_last_of(' ') == std::string_view::npos ? 0 : key.find_last_of(' ') + 1);
  if (key.empty()) return std::nullopt;
  for (char c : key)
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '_')
      return std::nullopt;
  return std::pair{key, Trim(line.substr(eq + 3))};
}

}  // namespace

bool TrainerMetricsBlock::Read(std::string_view line, int64_t no) {
  const bool train = line.find("***** train metrics *****") != std::string_view::npos;
  if (train || line.find("***** eval metrics *****") != std::string_view::npos) {
    if (open_) done_ = std::move(open_);
    open_ = Block{{}, no, !train};
    return true;
  }
  if (!open_) return false;
  std::optional<std::pair<std::string_view, std::string_view>> entry = MetricsBlockEntry(line);
  if (!entry) {
    done_ = std::move(open_);
    open_.reset();
    return false;
  }
  auto [key, value] = *entry;
  std::optional<double> v = key.find("_runtime") != std::string_view::npos
                                ? MetricsBlockSeconds(value)
                                : ParseNumber(value);
  open_->dict.emplace(std::string(key), v);  // "1351978GF", "123MB": kept as no number
  return true;
}

std::optional<TrainerMetricsBlock::Block> TrainerMetricsBlock::Take(bool at_end) {
  if (at_end && !done_ && open_) {  // the log ended in the block
    done_ = std::move(open_);
    open_.reset();
  }
  std::optional<Block> b = std::move(done_);
  done_.reset();
  return b;
}

}  // namespace bm::logparse
