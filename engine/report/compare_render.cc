// Rendering of compare.h's Comparison (Markdown and JSON).
#include <fmt/format.h>

#include "engine/report/compare.h"
#include "engine/report/markdown.h"

namespace bm::report {
namespace {

std::string Opt(Quantity q, const std::optional<double>& v) {
  return v ? FormatValue(q, *v) : std::string();
}

std::string Signed(const std::string& s) {
  return s.empty() || s[0] == '-' || s.find_first_not_of("0.%") == std::string::npos ? s : "+" + s;
}

}  // namespace

std::string RenderComparisonMarkdown(const Comparison& c) {
  std::string out =
      fmt::format("## compare {} (A, reference) with {} (B)\n\n", c.a_label, c.b_label);
  std::vector<std::vector<std::string>> cells;
  for (const MetricDelta& m : c.metrics) {
    std::string delta, rel;
    if (m.a && m.b) {
      // Percent quantities differ by percentage points, not percent.
      bool percent = m.quantity == Quantity::kMfu || m.quantity == Quantity::kAccuracy;
      delta = Signed(FormatValue(m.quantity, *m.b - *m.a, !percent)) + (percent ? " pp" : "");
      if (*m.a != 0) rel = Signed(FormatValue(Quantity::kRelDiff, (*m.b - *m.a) / *m.a));
    }
    cells.push_back({m.name, Opt(m.quantity, m.a), Opt(m.quantity, m.b), delta, rel});
  }
  out += MarkdownTable({"metric", "A", "B", "B - A", "(B - A) / A"}, cells,
                       {false, true, true, true, true});

  out += "\n### Differences\n\n";
  if (c.differences.empty()) out += "None: same settings, same platform.\n";
  for (const Difference& d : c.differences) {
    bool tag = d.platform && d.field.rfind("platform", 0) != 0;
    out += fmt::format("- {}{}: {} \u2192 {}\n", d.field, tag ? " (platform)" : "", d.a, d.b);
  }

  out += c.quality ? "\n### Quality target\n\n" : "\n### Loss alignment\n\n";
  if (!c.alignment) return out + c.Verdict() + "\n";
  const Alignment& al = *c.alignment;
  out += fmt::format("Rule: from step {} on, mean |loss_B - loss_A| / loss_A below {}.\n\n",
                     al.options.from_step, FormatValue(Quantity::kRelDiff, al.options.tolerance));
  out += c.Verdict() + "\n";
  if (al.only_reference > 0 || al.only_candidate > 0) {
    out += fmt::format("\nNot compared: {} steps only in A, {} only in B.\n", al.only_reference,
                       al.only_candidate);
  }
  if (!al.worst.empty()) {
    out += "\nWorst steps:\n\n";
    std::vector<std::vector<std::string>> worst;
    for (const StepDiff& d : al.worst) {
      worst.push_back({fmt::format("{}", d.step), FormatValue(Quantity::kLoss, d.reference),
                       FormatValue(Quantity::kLoss, d.candidate),
                       FormatValue(Quantity::kRelDiff, d.rel_diff)});
    }
    out +=
        MarkdownTable({"step", "loss A", "loss B", "rel. diff"}, worst, {true, true, true, true});
  }
  return out;
}

std::string RenderComparisonJson(const Comparison& c) {
  nlohmann::json j = {
      {"format", "benchmake-compare"}, {"version", 1}, {"a", c.a_label}, {"b", c.b_label}};
  nlohmann::json& metrics = j["metrics"] = nlohmann::json::object();
  for (const MetricDelta& m : c.metrics) {
    metrics[m.id] = {{"a", m.a ? nlohmann::json(*m.a) : nlohmann::json()},
                     {"b", m.b ? nlohmann::json(*m.b) : nlohmann::json()}};
  }
  nlohmann::json& diffs = j["differences"] = nlohmann::json::array();
  for (const Difference& d : c.differences) {
    diffs.push_back({{"field", d.field}, {"a", d.a}, {"b", d.b}, {"platform", d.platform}});
  }
  if (c.alignment) {
    const Alignment& al = *c.alignment;
    nlohmann::json worst = nlohmann::json::array();
    for (const StepDiff& d : al.worst) {
      worst.push_back(
          {{"step", d.step}, {"a", d.reference}, {"b", d.candidate}, {"rel_diff", d.rel_diff}});
    }
    j["alignment"] = {{"from_step", al.options.from_step},
                      {"tolerance", al.options.tolerance},
                      {"compared_steps", al.compared_steps},
                      {"first_step", al.first_step},
                      {"last_step", al.last_step},
                      {"only_a", al.only_reference},
                      {"only_b", al.only_candidate},
                      {"mean_rel_diff", al.mean_rel_diff},
                      {"largest",
                       {{"step", al.largest.step},
                        {"a", al.largest.reference},
                        {"b", al.largest.candidate},
                        {"rel_diff", al.largest.rel_diff}}},
                      {"pass", al.pass},
                      {"worst", std::move(worst)}};
  } else {
    j["alignment"] = nullptr;
  }
  j["quality_reached"] = c.quality ? nlohmann::json(c.quality->pass) : nlohmann::json(nullptr);
  j["verdict"] = c.Verdict();
  return j.dump(2) + "\n";
}

}  // namespace bm::report
