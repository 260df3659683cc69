#include "engine/report/chart_scale.h"

#include <fmt/format.h>

#include <cmath>

namespace bm::report {

double Scale::operator()(double v) const {
  double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                 : (v - lo) / (hi - lo);
  return px_lo + t * (px_hi - px_lo);
}

static double NiceStep(double range, int target) {
  double raw = range / std::max(1, target);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / mag;
  double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nice * mag;
}

void NiceRange(double& lo, double& hi, int target) {
  if (!(hi > lo)) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  double step = NiceStep(hi - lo, target);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
}

std::vector<double> LinearTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo)) return ticks;
  double step = NiceStep(hi - lo, target);
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0 && hi > lo)) return ticks;
  for (const std::vector<double>& mantissas :
       {std::vector<double>{1, 1.5, 2, 3, 4, 5, 6, 8}, std::vector<double>{1, 2, 3, 5},
        std::vector<double>{1}}) {
    ticks.clear();
    for (int k = static_cast<int>(std::floor(std::log10(lo)));
         k <= static_cast<int>(std::ceil(std::log10(hi))); ++k) {
      for (double m : mantissas) {
        double v = m * std::pow(10.0, k);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    if (ticks.size() <= 8) return ticks;
  }
  return ticks;
}

std::string TickLabel(double v) {
  for (int precision = 1; precision <= 15; ++precision) {
    std::string s = fmt::format("{:.{}g}", v, precision);
    if (std::fabs(std::stod(s) - v) <= std::fabs(v) * 1e-9) {
      if (s.find('e') != std::string::npos && std::fabs(v) >= 1) s = fmt::format("{:.0f}", v);
      return s;
    }
  }
  return fmt::format("{}", v);
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace bm::report
