// Self-contained SVG charts (no plotting dependency; they open in any browser). Two kinds:
// panels of horizontal probability bars (sweep: one panel per setting) and a line chart of
// series over steps with optional marked points (generate --trace, compare). Every series is a
// <g class="series" data-name=...> whose points carry data-value, so tests can read them back.
#pragma once

#include <string>
#include <vector>

namespace ls::inspect {

struct SvgBar {
  std::string label;
  double value = 0;  // in [0, 1]
};

struct SvgPanel {
  std::string title;
  std::vector<SvgBar> bars;
};

// Panels laid out in a grid, each with its bars scaled to [0, 1].
std::string bar_panels_svg(const std::string& title, const std::vector<SvgPanel>& panels);

struct SvgSeries {
  std::string name;
  std::vector<double> y;
  std::string color;               // CSS colour
  bool right_axis = false;         // plotted against the right axis (its own scale)
  std::vector<std::string> notes;  // optional per-point tooltip text
};

struct SvgMark {
  std::size_t x = 0;  // point index
  std::string label;
};

// A line chart over x = 0..n-1 (x_labels name the points; may be empty). Marks are drawn as red
// vertical lines with a tooltip, grouped in <g class="marks">, with `marks_legend` as their
// legend entry. Axes run from 0 to a round value, ticked at round steps (1, 2 or 5 x 10^k).
std::string line_chart_svg(const std::string& title, const std::string& x_label,
                           const std::vector<std::string>& x_labels,
                           const std::vector<SvgSeries>& series, const std::vector<SvgMark>& marks,
                           const std::string& left_label, const std::string& right_label,
                           const std::string& marks_legend = "marked points");

// A token's text as a chart label: spaces shown as '␣' (SVG collapses and trims them, so
// " Fahr" would read "Fahr"), isolated in its own direction (FSI ... PDI) so that an Arabic or
// Hebrew token neither reorders nor is reordered by the text around it.
std::string svg_token_label(const std::string& text);

// Round tick values from 0 covering [0, hi]: a step of 1, 2 or 5 x 10^k, 4 to 10 intervals.
std::vector<double> nice_ticks(double hi);

// Writes `text` to `path`; throws naming the flag and path on failure.
void write_svg_file(const std::string& path, const std::string& text, const char* flag = "--svg");

}  // namespace ls::inspect
