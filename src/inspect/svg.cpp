// SVG chart writers (see svg.h). Coordinates are plain numbers; text is XML-escaped.
#include "inspect/svg.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/output_file.h"

namespace ls::inspect {

namespace {

std::string esc(const std::string& s) {
  std::string out;
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
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string header(double w, double h, const std::string& title) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<title>{2}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{2}</text>\n",
      w, h, esc(title));
}

double finite_or_zero(double v) {
  return std::isfinite(v) ? v : 0.0;
}

// A tick value printed as written by hand: 0.0002, 5e-05, 1.5, 20.
std::string tick_text(double v) {
  if (v == 0) return "0";
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::string svg_token_label(const std::string& text) {
  std::string out = "\u2068";  // FIRST STRONG ISOLATE
  for (const char c : text) {
    if (c == ' ')
      out += "\u2423";  // OPEN BOX
    else
      out += c;
  }
  return out + "\u2069";  // POP DIRECTIONAL ISOLATE
}

std::vector<double> nice_ticks(double hi) {
  if (!(hi > 0) || !std::isfinite(hi)) hi = 1;
  const double raw = hi / 4;  // at least 4 intervals
  const int k = static_cast<int>(std::floor(std::log10(raw)));
  // step = m x 10^k; each tick i * m x 10^k computed as an integer over (or times) an exact power
  // of ten, so that 0.6 is the double nearest 0.6 (3 * 0.2 would not be).
  const double pow10 = std::pow(10.0, std::abs(k));
  const auto value = [&](double units) { return k < 0 ? units / pow10 : units * pow10; };
  double m = 1;
  for (const double c : {1.0, 2.0, 5.0, 10.0})
    if (value(c) <= raw * 1.0000001) m = c;
  // step <= hi / 4 < 2.5 step, so ceil(hi / step) is 4 to 10 intervals.
  const auto intervals = static_cast<int>(std::ceil(hi / value(m) - 1e-9));
  std::vector<double> ticks;
  for (int i = 0; i <= intervals; ++i) ticks.push_back(value(m * i));
  return ticks;
}

std::string bar_panels_svg(const std::string& title, const std::vector<SvgPanel>& panels) {
  const double panel_w = 330, bar_h = 16, label_w = 120, bar_w = 150;
  std::size_t max_bars = 1;
  for (const auto& p : panels) max_bars = std::max(max_bars, p.bars.size());
  const double panel_h = 28 + bar_h * static_cast<double>(max_bars) + 12;
  const std::size_t cols = std::min<std::size_t>(std::max<std::size_t>(panels.size(), 1), 3);
  const std::size_t rows = (panels.size() + cols - 1) / cols;
  const double w = 20 + panel_w * static_cast<double>(cols);
  const double h = 36 + panel_h * static_cast<double>(std::max<std::size_t>(rows, 1));
  std::string s = header(w, h, title);
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const double x0 = 10 + panel_w * static_cast<double>(i % cols);
    const double y0 = 32 + panel_h * static_cast<double>(i / cols);
    s += fmt::format("<g class=\"series\" data-name=\"{}\" transform=\"translate({},{})\">\n",
                     esc(panels[i].title), x0, y0);
    s += fmt::format("<text x=\"0\" y=\"14\" font-weight=\"bold\">{}</text>\n",
                     esc(panels[i].title));
    for (std::size_t b = 0; b < panels[i].bars.size(); ++b) {
      const auto& bar = panels[i].bars[b];
      const double v = std::clamp(finite_or_zero(bar.value), 0.0, 1.0);
      const double y = 22 + bar_h * static_cast<double>(b);
      s += fmt::format(
          "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
          "<rect class=\"point\" data-label=\"{}\" data-value=\"{:.17g}\" x=\"{}\" y=\"{}\" "
          "width=\"{:.2f}\" height=\"{}\" fill=\"#4878d0\"><title>{} {:.4f}</title></rect>"
          "<text x=\"{:.2f}\" y=\"{}\">{:.1f}%</text>\n",
          label_w - 4, y + 11, esc(bar.label), esc(bar.label), bar.value, label_w, y, v * bar_w,
          bar_h - 3, esc(bar.label), bar.value, label_w + v * bar_w + 3, y + 11, 100 * v);
    }
    s += "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string line_chart_svg(const std::string& title, const std::string& x_label,
                           const std::vector<std::string>& x_labels,
                           const std::vector<SvgSeries>& series, const std::vector<SvgMark>& marks,
                           const std::string& left_label, const std::string& right_label,
                           const std::string& marks_legend) {
  std::size_t n = 1;
  for (const auto& se : series) n = std::max(n, se.y.size());
  const double left = 90, right = 80, plot_h = 260;
  double plot_w = std::max(560.0, std::min(1600.0, 28.0 * static_cast<double>(n)));
  // Wide enough for the title; the legend wraps onto as many rows as it needs.
  plot_w = std::max(plot_w, 7.5 * static_cast<double>(title.size()) - left - right);
  std::vector<std::pair<double, double>> legend_at;
  double lx = left, ly = 34;
  std::vector<std::string> legend_names;
  for (const auto& se : series) legend_names.push_back(se.name);
  if (!marks.empty()) legend_names.push_back(marks_legend);
  for (const auto& name : legend_names) {
    const double item = 24 + 7.0 * static_cast<double>(name.size());
    if (lx + item > left + plot_w && lx > left) {
      lx = left;
      ly += 16;
    }
    legend_at.emplace_back(lx, ly);
    lx += item;
  }
  const double top = ly + 24;
  const double w = left + plot_w + right, h = top + plot_h + 110;
  auto ticks = [&](bool right_axis) {
    double hi = 0;
    for (const auto& se : series)
      if (se.right_axis == right_axis)
        for (double v : se.y) hi = std::max(hi, finite_or_zero(v));
    return nice_ticks(hi);
  };
  const std::vector<double> ticks_l = ticks(false), ticks_r = ticks(true);
  const double hi_l = ticks_l.back(), hi_r = ticks_r.back();
  auto px = [&](std::size_t i) {
    return left +
           (n > 1 ? plot_w * static_cast<double>(i) / static_cast<double>(n - 1) : plot_w / 2);
  };
  auto py = [&](double v, bool r) {
    return top + plot_h - plot_h * finite_or_zero(v) / (r ? hi_r : hi_l);
  };
  std::string s = header(w, h, title);
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", left,
      top, plot_w, plot_h);
  for (const double v : ticks_l)
    s += fmt::format(
        "<text class=\"tick-left\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 4,
        py(v, false) + 4, tick_text(v));
  if (!right_label.empty())
    for (const double v : ticks_r)
      s += fmt::format("<text class=\"tick-right\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                       left + plot_w + 4, py(v, true) + 4, tick_text(v));
  s += fmt::format(
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
      top + plot_h / 2, top + plot_h / 2, esc(left_label));
  if (!right_label.empty())
    s += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" transform=\"rotate(90 {0} "
        "{1})\">{2}</text>\n",
        w - 14, top + plot_h / 2, esc(right_label));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                   h - 10, esc(x_label));
  const std::size_t every = std::max<std::size_t>(1, n / 30);
  for (std::size_t i = 0; i < x_labels.size() && i < n; i += every)
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-45 {:.1f} "
        "{})\">{}</text>\n",
        px(i), top + plot_h + 14, px(i), top + plot_h + 14, esc(x_labels[i]));
  s += "<g class=\"marks\">\n";
  for (const auto& m : marks)
    s += fmt::format(
        "<line class=\"mark\" data-x=\"{}\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" "
        "stroke=\"#d62728\" stroke-dasharray=\"3,2\"><title>{}</title></line>\n",
        m.x, px(m.x), px(m.x), top, top + plot_h, esc(m.label));
  s += "</g>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& se = series[k];
    std::string pts;
    for (std::size_t i = 0; i < se.y.size(); ++i)
      pts += fmt::format("{:.1f},{:.1f} ", px(i), py(se.y[i], se.right_axis));
    s += fmt::format(
        "<g class=\"series\" data-name=\"{}\">\n<polyline points=\"{}\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"1.5\"/>\n",
        esc(se.name), pts, esc(se.color));
    for (std::size_t i = 0; i < se.y.size(); ++i) {
      const std::string note = i < se.notes.size() ? se.notes[i] : "";
      s += fmt::format(
          "<circle class=\"point\" data-x=\"{}\" data-value=\"{:.17g}\" cx=\"{:.1f}\" "
          "cy=\"{:.1f}\" "
          "r=\"2.5\" fill=\"{}\"><title>{} {}: {:.4f} {}</title></circle>\n",
          i, finite_or_zero(se.y[i]), px(i), py(se.y[i], se.right_axis), esc(se.color),
          esc(se.name), i, se.y[i], esc(note));
    }
    s += "</g>\n";
    const auto [lgx, lgy] = legend_at[k];
    s += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        lgx, lgy - 9, esc(se.color), lgx + 14, lgy, esc(se.name));
  }
  if (!marks.empty()) {
    const auto [lgx, lgy] = legend_at.back();
    s += fmt::format(
        "<line x1=\"{0:.0f}\" x2=\"{0:.0f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#d62728\" "
        "stroke-dasharray=\"3,2\"/><text class=\"legend-marks\" x=\"{3:.0f}\" "
        "y=\"{2:.0f}\">{4}</text>\n",
        lgx + 5, lgy - 10, lgy, lgx + 14, esc(marks_legend));
  }
  s += "</svg>\n";
  return s;
}

void write_svg_file(const std::string& path, const std::string& text, const char* flag) {
  OutputFile file(path, flag);
  file.stream() << text;
  file.commit();
}

}  // namespace ls::inspect
