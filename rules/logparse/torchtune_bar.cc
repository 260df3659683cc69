#include "rules/logparse/torchtune_bar.h"

#include <algorithm>
#include <cctype>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/tqdm_bar.h"

namespace bm::logparse {
namespace {

// The whole count of digits ending just before `end` in text, and where they start.
std::optional<int64_t> DigitsBefore(std::string_view text, size_t end, size_t* start) {
  size_t p = end;
  while (p > 0 && std::isdigit(static_cast<unsigned char>(text[p - 1]))) --p;
  if (p == end || end - p > 15) return std::nullopt;
  *start = p;
  return WholeCount(ParseNumber(text.substr(p, end - p)));
}

}  // namespace

Result<bool> TorchtuneBars::Read(std::string_view line, int64_t no, std::string_view name) {
  constexpr std::string_view kLoss = "|Loss: ";
  const size_t at = line.find(kLoss);
  if (at == std::string_view::npos) return false;
  size_t step_at = 0, epoch_at = 0;
  std::optional<int64_t> step = DigitsBefore(line, at, &step_at);
  if (!step || step_at == 0 || line[step_at - 1] != '|') return false;
  std::optional<int64_t> epoch = DigitsBefore(line, step_at - 1, &epoch_at);
  // The description starts the drawing: after a prefix's ':' or ']', a space, or the line start.
  if (!epoch || (epoch_at > 0 && std::isalnum(static_cast<unsigned char>(line[epoch_at - 1]))))
    return false;
  std::string_view rest = line.substr(at + kLoss.size());
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return false;  // a drawing cut before its bar
  std::optional<double> loss = ParseNumber(rest.substr(0, colon));
  if (!loss) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: torchtune's bar 'Loss' is '{}', not a number", name,
                  no, rest.substr(0, colon));
  }
  ++drawings_;
  if (first_line_ == 0) first_line_ = no;
  losses_.emplace(*step, std::pair{*loss, no});
  Drawing d{*epoch, *step, no, std::nullopt, std::nullopt};
  if (std::optional<TqdmCounter> c = ReadTqdmCounter(rest.substr(colon))) {
    d.n = c->n;
    d.elapsed = c->elapsed;
  }
  drawings_list_.push_back(d);
  return true;
}

bool TorchtuneBars::Counted() const {
  return std::any_of(drawings_list_.begin(), drawings_list_.end(),
                     [](const Drawing& d) { return d.n.has_value(); });
}

std::vector<Iteration> TorchtuneBars::Steps(int64_t* zero_gaps) const {
  // Per epoch's bar: the offset n - step of its set_description drawings (the smallest), and the
  // elapsed seconds at the first drawing of each count.
  std::map<int64_t, int64_t> offset;  // epoch -> n - step
  // (epoch, n) -> (elapsed, line)
  std::map<std::pair<int64_t, int64_t>, std::pair<double, int64_t>> ended;
  for (const Drawing& d : drawings_list_) {
    if (!d.n) continue;
    auto [o, fresh] = offset.emplace(d.epoch, *d.n - d.step);
    if (!fresh) o->second = std::min(o->second, *d.n - d.step);
    if (d.elapsed) ended.emplace(std::pair{d.epoch, *d.n}, std::pair{*d.elapsed, d.line});
  }
  std::map<int64_t, Iteration> steps;
  for (const auto& [step, loss] : losses_) {
    Iteration& it = steps[step];
    it.step = step;
    it.loss = loss.first;
    it.line = loss.second;
  }
  *zero_gaps = 0;
  std::map<int64_t, std::pair<double, int64_t>> ms;  // step -> (ms, line of its count)
  for (const auto& [key, at] : ended) {
    const auto& [epoch, n] = key;
    const int64_t step = n - offset.at(epoch);
    if (step < 1) continue;
    auto before = ended.find({epoch, n - 1});
    if (before == ended.end()) continue;
    const double s = at.first - before->second.first;
    if (s <= 0) ++*zero_gaps;
    ms[step] = {s * 1000.0, at.second};
  }
  if (*zero_gaps == 0) {
    for (const auto& [step, m] : ms) {
      Iteration& it = steps[step];
      it.step = step;
      it.ms = m.first;
      // A step whose count was drawn but not its description: the line of that count.
      if (it.line == 0) it.line = m.second;
    }
  }
  std::vector<Iteration> out;
  for (auto& [step, it] : steps) out.push_back(it);
  return out;
}

}  // namespace bm::logparse
