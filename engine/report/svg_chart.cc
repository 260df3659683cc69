#include "engine/report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/report/chart_scale.h"

namespace bm::report {
namespace {

constexpr double kLeft = 64, kTop = 34, kBottom = 46, kLegend = 210;

std::string Num(double v) { return fmt::format("{:.1f}", v); }

// Axes, grid and tick labels of one y scale, and the x axis.
std::string YAxis(const Scale& y, const std::vector<double>& ticks, double x0, double x1) {
  std::string out;
  for (double t : ticks) {
    double py = y(t);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        Num(x0), Num(py), Num(x1), Num(py), Num(x0 - 6), Num(py + 4), XmlEscape(TickLabel(t)));
  }
  return out;
}

std::string Frame(const std::string& id, const std::string& title, int width, int height) {
  return fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n"
      "<text class=\"title\" x=\"{}\" y=\"20\">{}</text>\n",
      XmlEscape(id), width, height, width, height, XmlEscape(title), Num(kLeft), XmlEscape(title));
}

std::string Legend(const std::vector<std::pair<std::string, std::string>>& items, double x,
                   double y) {
  std::string out;
  for (const auto& [color, text] : items) {
    out += fmt::format(
        "<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\">{}</text></g>\n",
        Num(x), Num(y), XmlEscape(color), Num(x + 18), Num(y + 10), XmlEscape(text));
    y += 18;
  }
  return out;
}

std::string Empty(double x, double y) {
  return fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\">no data</text>\n", Num(x), Num(y));
}

}  // namespace

std::string PaletteColor(size_t i) {
  static const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                  "#E69F00", "#56B4E9", "#000000", "#F0E442"};
  return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

std::string RenderLineChart(const LineChart& c) {
  double x0 = kLeft, x1 = c.width - kLegend, y0 = c.height - kBottom, y1 = kTop;
  std::string out = Frame(c.id, c.title, c.width, c.height);
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const Series& s : c.series) {
    for (const auto& [x, y] : s.points) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  }
  if (!std::isfinite(xmin)) return out + Empty((x0 + x1) / 2, (y0 + y1) / 2) + "</svg>\n";
  if (xmax == xmin) xmax = xmin + 1;
  Scale x{xmin, xmax, x0, x1, false};

  // x axis (shared by both groups)
  out += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", Num(x0),
                     Num(y0), Num(x1), Num(y0));
  for (double t : LinearTicks(xmin, xmax, 8)) {
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       Num(x(t)), Num(y0 + 16), XmlEscape(TickLabel(t)));
  }
  out += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     Num((x0 + x1) / 2), Num(c.height - 8.0), XmlEscape(c.x_label));
  out += fmt::format(
      "<text class=\"label\" x=\"14\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">{}</text>\n",
      Num((y0 + y1) / 2), Num((y0 + y1) / 2), XmlEscape(c.y_label));

  auto group = [&](bool log) {
    double lo = ymin, hi = ymax;
    std::vector<double> ticks;
    if (log) {
      lo = lo / 1.05, hi = hi * 1.05;
      ticks = LogTicks(lo, hi);
    } else {
      NiceRange(lo, hi);
      ticks = LinearTicks(lo, hi);
    }
    Scale y{lo, hi, y0, y1, log};
    std::string g = fmt::format("<g class=\"{}\">\n", log ? "y-log" : "y-lin");
    g += YAxis(y, ticks, x0, x1);
    for (const Series& s : c.series) {
      size_t every = std::max<size_t>(1, (s.points.size() + c.max_points - 1) / c.max_points);
      std::string d;
      size_t n = 0;
      for (size_t i = 0; i < s.points.size(); ++i) {
        if (i % every != 0 && i + 1 != s.points.size()) continue;
        d += fmt::format("{}{},{}", d.empty() ? "M" : " L", Num(x(s.points[i].first)),
                         Num(y(s.points[i].second)));
        ++n;
      }
      g += fmt::format(
          "<path class=\"series\" data-series=\"{}\" data-points=\"{}\" fill=\"none\" "
          "stroke=\"{}\" stroke-width=\"1.6\" d=\"{}\"/>\n",
          XmlEscape(s.name), n, XmlEscape(s.color), d);
    }
    return g + "</g>\n";
  };
  out += group(false);
  if (ymin > 0) out += group(true);

  std::vector<std::pair<std::string, std::string>> legend;
  for (const Series& s : c.series) legend.emplace_back(s.color, s.name);
  out += Legend(legend, x1 + 16, y1);
  return out + "</svg>\n";
}

std::string RenderBarChart(const BarChart& c) {
  double x0 = kLeft, x1 = c.width - kLegend, y0 = c.height - kBottom - 14, y1 = kTop + 8;
  std::string out = Frame(c.id, c.title, c.width, c.height);
  size_t bars = 0;
  double ymax = 0;
  for (const BarGroup& g : c.groups) {
    bars += g.bars.size();
    for (const Bar& b : g.bars) ymax = std::max(ymax, Scaled(c.quantity, b.value.max));
  }
  if (bars == 0) return out + Empty((x0 + x1) / 2, (y0 + y1) / 2) + "</svg>\n";
  double lo = 0, hi = ymax > 0 ? ymax * 1.08 : 1;
  NiceRange(lo, hi);
  lo = 0;
  Scale y{lo, hi, y0, y1, false};
  out += YAxis(y, LinearTicks(lo, hi), x0, x1);
  out += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", Num(x0),
                     Num(y0), Num(x1), Num(y0));
  out += fmt::format(
      "<text class=\"label\" x=\"14\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">{}</text>\n",
      Num((y0 + y1) / 2), Num((y0 + y1) / 2), XmlEscape(c.y_label));

  // Slots: one per bar plus one gap between groups.
  double slots = static_cast<double>(bars + c.groups.size() - 1) + 0.6;
  double slot = (x1 - x0) / slots;
  double width = std::min(slot * 0.8, 64.0);  // few bars stay bars, not slabs
  double px = x0 + slot * 0.3;
  for (const BarGroup& g : c.groups) {
    double gx = px;
    for (const Bar& b : g.bars) {
      double v = Scaled(c.quantity, b.value.median);
      double top = y(v);
      out += fmt::format(
          "<rect class=\"bar\" data-series=\"{}\" data-value=\"{}\" x=\"{}\" y=\"{}\" "
          "width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{}\"><title>{}: "
          "{}</title></rect>\n",
          XmlEscape(b.name), fmt::format("{}", b.value.median), Num(px + (slot - width) / 2),
          Num(top), Num(width), Num(std::max(0.0, y0 - top)), XmlEscape(b.color), b.opacity,
          XmlEscape(b.name), XmlEscape(FormatStat(c.quantity, b.value)));
      double cx = px + slot / 2;
      if (b.value.varies()) {
        double ylo = y(Scaled(c.quantity, b.value.min)), yhi = y(Scaled(c.quantity, b.value.max));
        out += fmt::format(
            "<path class=\"whisker\" d=\"M{},{} L{},{} M{},{} L{},{} M{},{} L{},{}\"/>\n", Num(cx),
            Num(ylo), Num(cx), Num(yhi), Num(cx - 4), Num(ylo), Num(cx + 4), Num(ylo), Num(cx - 4),
            Num(yhi), Num(cx + 4), Num(yhi));
        top = std::min(top, yhi);
      }
      out +=
          fmt::format("<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                      Num(cx), Num(top - 4), XmlEscape(FormatValue(c.quantity, b.value.median)));
      px += slot;
    }
    out += fmt::format("<text class=\"group\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       Num((gx + px) / 2), Num(y0 + 18), XmlEscape(g.name));
    px += slot;
  }
  out += Legend(c.legend, x1 + 16, y1);
  double ly = y1 + 18.0 * static_cast<double>(c.legend.size()) + 8;
  for (const auto& [opacity, text] : c.legend_opacity) {
    out += fmt::format(
        "<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#555\" "
        "fill-opacity=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>\n",
        Num(x1 + 16), Num(ly), opacity, Num(x1 + 34), Num(ly + 10), XmlEscape(text));
    ly += 18;
  }
  return out + "</svg>\n";
}

}  // namespace bm::report
