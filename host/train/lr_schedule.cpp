#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/text.h"
#include "lra/status.h"

namespace lra::host {
namespace {

constexpr double kPi = 3.14159265358979323846;

double wsd_factor(double s, double warmup, double steps, double decay) {
  const double stable_end = steps - decay;  // W + S
  if (s < warmup) return 1.0 / warmup + (1.0 - 1.0 / warmup) * s / warmup;
  if (s < stable_end) return 1.0;
  return 1.0 - (1.0 - 1.0 / decay) * (s - stable_end) / decay;
}

}  // namespace

LrSchedule::LrSchedule(const TrainConfig& cfg)
    : base_(cfg.lr),
      warmup_(static_cast<double>(cfg.warmup)),
      steps_per_cycle_(static_cast<double>(cfg.steps_per_cycle)),
      steps_(static_cast<double>(cfg.steps)),
      decay_steps_(static_cast<double>(cfg.decay_steps)) {
  std::string bad;
  auto f = parse_lr_factors(cfg.schedule, &bad);
  if (!f) {
    throw Error(ErrorKind::rules, "train.schedule = \"" + cfg.schedule + "\": unknown factor '" + bad +
                                      "' (known factors: " + text::join(lr_factor_names()) + ")");
  }
  factors_ = std::move(*f);
}

double LrSchedule::operator()(int64_t step) const {
  if (step < 0) {
    throw Error(ErrorKind::internal,
                "learning rate requested for negative update counter " + std::to_string(step));
  }
  const double s = static_cast<double>(step);
  double ret = 1.0;
  for (LrFactor f : factors_) {
    switch (f) {
      case LrFactor::constant:
        ret *= base_;
        break;
      case LrFactor::linear_warmup:
        ret *= std::min(1.0, s / warmup_);
        break;
      case LrFactor::rsqrt_decay:
        ret /= std::sqrt(std::max(s, warmup_));
        break;
      case LrFactor::rsqrt_normalized_decay:
        ret *= std::sqrt(warmup_);
        ret /= std::sqrt(std::max(s, warmup_));
        break;
      case LrFactor::decay_every:
        ret *= std::pow(kDecayEveryFactor, static_cast<double>(step / kDecayEverySteps));
        break;
      case LrFactor::cosine_decay: {
        double progress = std::max(0.0, (s - warmup_) / steps_per_cycle_);
        // Python's float `%`; progress >= 0, so std::fmod agrees with it.
        ret *= std::max(0.0, 0.5 * (1.0 + std::cos(kPi * std::fmod(progress, 1.0))));
        break;
      }
      case LrFactor::wsd:
        ret *= wsd_factor(s, warmup_, steps_, decay_steps_);
        break;
    }
  }
  return ret;
}

}  // namespace lra::host
