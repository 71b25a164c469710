// runs/span_run.h — `lrahost span --run DIR`'s work: the LRA paper's required
// attention span (§2.3) of a trained run (runs/trained_run.h), per layer and
// head, and the gradient span of any mixer, over seeded random validation
// examples, written to span.json. The arithmetic is span/span.h and
// span/gradient_span.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "span/gradient_span.h"
#include "span/span.h"

namespace lra::host {

struct SpanArgs {
  std::string run;                      // a run directory (result.json + model.pt)
  std::optional<std::string> plugin;    // --plugin: the mixer to load (default: installed by the recorded name)
  int64_t samples = 1000;               // validation examples, drawn at random
  uint64_t seed = 0;                    // which examples (recorded)
  int64_t batch = 8;                    // examples per forward pass
  int64_t queries = 8;                  // gradient span: query rows drawn per sequence and layer
  double coverage = 0.9;                // gradient span: the share of the gradient weight the radius covers
  std::optional<std::string> out;       // span.json (default: <run>/span.json)
  std::optional<std::string> data_dir;
  std::string device = "auto";
  int threads = 0;
};

struct SpanOutcome {
  std::string plugin, task;   // the run's
  std::optional<span::Summary> attention;  // mixers that declare attention_probs
  span::GradientSummary gradient;          // every mixer
  int64_t samples = 0;        // measured: --samples, or all of the validation split when it has fewer
  std::filesystem::path out;  // span.json, written
};

// The gradient span of every mixer, and the attention span of one that
// reports attention probabilities. Errors are lra::Error with the documented
// kinds.
SpanOutcome measure_span(const SpanArgs& a, spdlog::logger& log);

}  // namespace lra::host
