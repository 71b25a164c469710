// `lrahost span --run DIR`: the required attention span and the gradient
// span of a trained run (runs/span_run.h), and the tables a person reads.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/console_log.h"
#include "common/dir_lock.h"
#include "device/blas_kernels.h"
#include "runs/span_run.h"

namespace lra::host {
namespace {

void print_summary(const SpanOutcome& r, const SpanArgs& a) {
  const int64_t samples = r.samples;
  std::printf("\nspan: %s on %s (%lld validation examples, seed %llu)\n", r.plugin.c_str(), r.task.c_str(),
              static_cast<long long>(samples), static_cast<unsigned long long>(a.seed));
  if (samples < a.samples)
    std::printf("  (all of the validation split: --samples %lld asked for more)\n", static_cast<long long>(a.samples));
  if (r.attention) {
    const span::Summary& s = *r.attention;
    std::printf("required attention span (attention probabilities)\n");
    std::printf("  overall  %10.2f tokens  (%lld sequences, %lld query rows)\n", s.span,
                static_cast<long long>(s.sequences), static_cast<long long>(s.queries));
    size_t heads = 0;
    for (const auto& h : s.per_head) heads = std::max(heads, h.size());
    std::printf("  %-7s %10s", "layer", "mean");
    for (size_t h = 0; h < heads; ++h) std::printf(" %9s%zu", "head ", h);
    std::printf("\n");
    for (size_t l = 0; l < s.per_layer.size(); ++l) {
      std::printf("  %-7zu %10.2f", l, s.per_layer[l]);
      for (double v : s.per_head[l]) std::printf(" %10.2f", v);
      std::printf("\n");
    }
  } else {
    std::printf("required attention span: not defined (the plugin reports no attention probabilities)\n");
  }
  const span::GradientSummary& g = r.gradient;
  std::printf("gradient span (input-gradient weight, %lld rows per sequence and layer)\n",
              static_cast<long long>(a.queries));
  std::printf("  %-7s %10s %10s\n", "layer", "distance", "radius");
  std::printf("  %-7s %10.2f %10.2f  (tokens; radius covers %.0f%% of the weight; %lld query rows)\n", "overall",
              g.distance, g.radius, 100 * a.coverage, static_cast<long long>(g.rows));
  for (size_t l = 0; l < g.per_layer_distance.size(); ++l)
    std::printf("  %-7zu %10.2f %10.2f\n", l, g.per_layer_distance[l], g.per_layer_radius[l]);
  std::printf("  span     %s\n", r.out.c_str());
}

}  // namespace

int span_command(const SpanArgs& a) {
  load_best_blas_kernels();  // may start the program again: before any other work
  if (a.out) check_output_path_name(*a.out);  // empty or blank-named: exit 2 before any work
  auto log = make_logger();
  print_summary(measure_span(a, *log), a);
  return 0;
}

void add_span_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SpanArgs>();
  auto* sa = app.add_subcommand("span", "Required attention span (LRA paper section 2.3) of a trained run, per layer "
                                        "and head, and the gradient span of any mixer");
  sa->add_option("--run", a->run, "Run directory written by lrahost run (result.json, model.pt)")->required();
  sa->add_option("--plugin", a->plugin,
                 "The run's mixer: an installed NAME, the PATH of its C++ plugin (.so) or its Python class FILE.py:CLASS "
                 "(default: the installed plugin of the name the run recorded; a path in result.json is never loaded)");
  sa->add_option("--samples", a->samples, "Validation examples, drawn at random")->check(CLI::PositiveNumber);
  add_seed_option(sa, a->seed, "Seed of the random draw (recorded)");
  sa->add_option("--batch", a->batch, "Examples per forward pass")->check(CLI::PositiveNumber);
  sa->add_option("--queries", a->queries, "Gradient span: query rows drawn per sequence and layer")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sa->add_option("--coverage", a->coverage, "Gradient span: the share of the gradient weight the radius covers")
      ->check(CLI::Range(0.01, 1.0));
  sa->add_option("--out", a->out, "Output JSON file (default: <run>/span.json)");
  sa->add_option("--data-dir", a->data_dir, "Data root (default: as for run)");
  add_device_option(sa, a->device);
  add_threads_option(sa, a->threads);
  on_parsed(sa, slot, a, [](SpanArgs& args) { return span_command(args); });
}

}  // namespace lra::host
