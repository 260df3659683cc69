// Inline SVG charts for the HTML report: no scripts, no external resources.
//
// Line chart: several series over a shared x axis (training step), drawn twice
// in one <svg>: a group of class "y-lin" (linear y axis) and one of class
// "y-log" (log y axis); the page's CSS shows one of them (html.h). Each series
// is a <path class="series" data-series="NAME" data-points="N">; series with
// more than max_points points are thinned to every k-th point (the last point
// is always kept). The log group is omitted when any y <= 0.
//
// Bar chart: groups (platforms) of bars (targets), each bar a
// <rect class="bar" data-series="NAME" data-value="MEDIAN">, a min–max whisker
// when the value varies over rounds, and its value as text above it.
//
// Both: a legend, axis ticks, and a <text class="empty"> "no data" when there
// is nothing to draw. Output is deterministic.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/report/number_format.h"
#include "engine/report/stat.h"

namespace bm::report {

struct Series {
  std::string name;
  std::string color;                              // CSS color
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChart {
  std::string id;  // the <svg> id
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
  int width = 820;
  int height = 380;
  size_t max_points = 1500;
};

struct Bar {
  std::string name;  // the series (target) name
  std::string color;
  Stat value;
  double opacity = 1.0;
};

struct BarGroup {
  std::string name;  // the platform
  std::vector<Bar> bars;
};

struct BarChart {
  std::string id;
  std::string title;
  std::string y_label;
  Quantity quantity = Quantity::kTokensPerS;  // how values and labels are shown
  std::vector<BarGroup> groups;
  std::vector<std::pair<std::string, std::string>> legend;     // (color, text)
  std::vector<std::pair<double, std::string>> legend_opacity;  // (opacity, text)
  int width = 820;
  int height = 340;
};

std::string RenderLineChart(const LineChart& chart);
std::string RenderBarChart(const BarChart& chart);

// The i-th color of a fixed palette (Okabe–Ito, colour-blind safe), cycling.
std::string PaletteColor(size_t i);

}  // namespace bm::report
