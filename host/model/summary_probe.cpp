#include "model/summary_probe.h"

#include <algorithm>

#include <torch/utils.h>

#include "model/mixer_call.h"
#include "model/random_state.h"

namespace lra::host {

bool mixer_reads_ahead(const MixerFactory& make, const BackboneSpec& spec) {
  const PreservedRandomState keep;
  torch::NoGradGuard no_grad;
  const ModelConfig& m = spec.model;
  const int64_t length = encoder_positions(m);
  torch::manual_seed(spec.seed);
  const std::shared_ptr<lra::Mixer> mixer = make(mixer_spec(m, length, 0, spec.seed));
  mixer->eval();
  for (auto& p : mixer->parameters())
    if (p.numel() > 0 && p.eq(0).all().item<bool>()) p.normal_(0.0, 0.02);
  const auto x = torch::randn({1, length, m.d_model});
  auto later = x.clone();
  later.narrow(1, 1, length - 1).normal_();
  const auto mask = torch::ones({1, length}, torch::kBool);
  const auto out = call_mixer(*mixer, x, mask).to(torch::kDouble);
  const auto out_later = call_mixer(*mixer, later, mask).to(torch::kDouble);
  // A mixer that only looks back gives position 0 the same output up to
  // rounding (an FFT convolution mixes every position numerically); one that
  // reads ahead moves it by a fraction of its size.
  const double moved = (out.select(1, 0) - out_later.select(1, 0)).abs().max().item<double>();
  const double size = out.abs().max().item<double>();
  return moved > 1e-4 * std::max(size, 1e-6);
}

SummaryPosition choose_summary_position(const MixerFactory& make, const BackboneSpec& spec) {
  const SummaryPosition lra = lra_summary_position(spec.model.pooling);
  if (lra == SummaryPosition::mean || lra == SummaryPosition::every_position) return lra;
  return mixer_reads_ahead(make, spec) ? SummaryPosition::first : SummaryPosition::after_last;
}

}  // namespace lra::host
