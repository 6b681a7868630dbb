#include "tools/bench_serve_plot.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include <cairo.h>
#include <fmt/format.h>

#include "ops/error.h"

namespace strata::tools {

namespace {

using json = nlohmann::json;

// A "nice" tick step for a range: 1, 2 or 5 times a power of ten.
double tickStep(double span) {
  double raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

struct Panel {
  double x, y, w, h;  // the plot area in pixels
  double xmax, ymax;  // data ranges from 0
  double px(double v) const { return x + v / xmax * w; }
  double py(double v) const { return y + h - v / ymax * h; }
};

void text(cairo_t* cr, double x, double y, const std::string& s, double size, double alignX = 0, double alignY = 0) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - e.width * alignX - e.x_bearing, y + e.height * alignY);
  cairo_show_text(cr, s.c_str());
}

void axes(cairo_t* cr, const Panel& p, const std::string& xLabel, const std::string& yLabel, const std::string& title) {
  cairo_set_source_rgb(cr, 0.92, 0.92, 0.92);
  cairo_set_line_width(cr, 1);
  double xs = tickStep(p.xmax), ys = tickStep(p.ymax);
  for (double v = 0; v <= p.xmax + 1e-9; v += xs) {
    cairo_move_to(cr, p.px(v), p.y);
    cairo_line_to(cr, p.px(v), p.y + p.h);
  }
  for (double v = 0; v <= p.ymax + 1e-9; v += ys) {
    cairo_move_to(cr, p.x, p.py(v));
    cairo_line_to(cr, p.x + p.w, p.py(v));
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_rectangle(cr, p.x, p.y, p.w, p.h);
  cairo_stroke(cr);
  for (double v = 0; v <= p.xmax + 1e-9; v += xs) text(cr, p.px(v), p.y + p.h + 16, fmt::format("{:g}", v), 12, 0.5, 0);
  for (double v = 0; v <= p.ymax + 1e-9; v += ys) text(cr, p.x - 6, p.py(v), fmt::format("{:g}", v), 12, 1, 0.5);
  text(cr, p.x + p.w / 2, p.y + p.h + 38, xLabel, 14, 0.5, 0);
  text(cr, p.x + p.w / 2, p.y - 12, title, 15, 0.5, 0);
  cairo_save(cr);
  cairo_translate(cr, p.x - 52, p.y + p.h / 2);
  cairo_rotate(cr, -M_PI / 2);
  text(cr, 0, 0, yLabel, 14, 0.5, 0);
  cairo_restore(cr);
}

const double kColors[][3] = {{0.12, 0.47, 0.71}, {0.84, 0.15, 0.16}, {0.17, 0.63, 0.17}, {1.0, 0.5, 0.05}, {0.58, 0.4, 0.74}};

std::string levelLabel(const json& run) {
  if (run.contains("concurrency")) return fmt::format("c={}", run["concurrency"].get<int64_t>());
  return fmt::format("{:g}/s", run.value("request_rate", 0.0));
}

}  // namespace

void writeServePlot(const std::string& path, const std::vector<json>& series) {
  const int width = 1400, height = 560;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  const char* metrics[2] = {"ttft_ms", "tpot_ms"};
  const char* names[2] = {"time to first token, p50 (ms)", "time per output token, p50 (ms)"};
  double xmax = 0, ymax[2] = {0, 0};
  for (const json& s : series)
    for (const json& r : s["runs"]) {
      xmax = std::max(xmax, r.value("output_throughput", 0.0));
      for (int k = 0; k < 2; ++k) ymax[k] = std::max(ymax[k], r[metrics[k]].value("p50", 0.0));
    }
  auto roundUp = [](double v) {
    if (v <= 0) return 1.0;
    double s = tickStep(v * 1.1);
    return std::ceil(v * 1.1 / s) * s;
  };
  xmax = roundUp(xmax);
  const json& first = series.front();
  // Prompts per level: one count, or a range when the levels differ.
  int64_t lo = INT64_MAX, hi = 0;
  for (const json& r : first["runs"]) {
    const int64_t n = r.value("num_prompts", r.value("completed", (int64_t)0) + r.value("failed", (int64_t)0));
    lo = std::min(lo, n), hi = std::max(hi, n);
  }
  const std::string prompts = lo == hi ? fmt::format("{}", hi) : fmt::format("{}-{}", lo, hi);
  const int64_t prefix = first.value("shared_prefix_len", (int64_t)0);
  std::string setup = fmt::format("{} prompts, {} input + {} output tokens{}", prompts, first.value("input_len", 0),
                                  first.value("output_len", 0),
                                  prefix ? fmt::format(", {}-token shared prefix", prefix) : "");
  for (int k = 0; k < 2; ++k) {
    Panel p{90.0 + k * 690.0, 60.0, 560.0, 420.0, xmax, roundUp(ymax[k])};
    axes(cr, p, "output tokens/s", names[k], k == 0 ? "TTFT against throughput" : "TPOT against throughput");
    for (size_t si = 0; si < series.size(); ++si) {
      const double* c = kColors[si % 5];
      cairo_set_source_rgb(cr, c[0], c[1], c[2]);
      cairo_set_line_width(cr, 2.5);
      bool started = false;
      for (const json& r : series[si]["runs"]) {
        double x = p.px(r.value("output_throughput", 0.0)), y = p.py(r[metrics[k]].value("p50", 0.0));
        if (!started) cairo_move_to(cr, x, y);
        else cairo_line_to(cr, x, y);
        started = true;
      }
      cairo_stroke(cr);
      for (const json& r : series[si]["runs"]) {
        double x = p.px(r.value("output_throughput", 0.0)), y = p.py(r[metrics[k]].value("p50", 0.0));
        cairo_arc(cr, x, y, 5, 0, 2 * M_PI);
        cairo_fill(cr);
        text(cr, x + 7, y - 7, levelLabel(r), 11);
      }
    }
  }
  // Legend and setup line.
  for (size_t si = 0; si < series.size(); ++si) {
    const double* c = kColors[si % 5];
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
    cairo_rectangle(cr, 90 + si * 260.0, 524, 18, 12);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text(cr, 114 + si * 260.0, 530, series[si].value("label", std::string("?")), 13, 0, 0.5);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  text(cr, width - 20, 530, setup, 12, 1, 0.5);

  cairo_status_t st = cairo_surface_write_to_png(surface, path.c_str());
  cairo_destroy(cr);
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) fail("--plot {}: cannot write the PNG ({})", path, cairo_status_to_string(st));
}

}  // namespace strata::tools
