#include "manifest/schedule.h"

#include <algorithm>
#include <cmath>

#include "common/text.h"

namespace lra::host {
namespace {

constexpr double kPi = 3.14159265358979323846;

using text::join;
using text::trim;

// The parsed factors of the most recent spec seen by learning_rate() on this
// thread, so a training loop calling it every step parses the string once.
struct ParseCache {
  std::string spec;
  std::vector<LrFactor> factors;
  bool valid = false;
};

}  // namespace

const std::vector<std::string>& lr_factor_names() {
  static const std::vector<std::string> names = {
      "constant",    "linear_warmup", "rsqrt_decay", "rsqrt_normalized_decay",
      "decay_every", "cosine_decay",  "wsd"};
  return names;
}

std::optional<std::vector<LrFactor>> parse_lr_factors(std::string_view spec, std::string* bad) {
  std::vector<LrFactor> out;
  const auto& names = lr_factor_names();
  size_t start = 0;
  while (true) {
    size_t star = spec.find('*', start);
    std::string_view part =
        trim(spec.substr(start, star == std::string_view::npos ? std::string_view::npos : star - start));
    auto it = std::find(names.begin(), names.end(), part);
    if (it == names.end()) {
      if (bad) *bad = std::string(part);
      return std::nullopt;
    }
    out.push_back(static_cast<LrFactor>(it - names.begin()));
    if (star == std::string_view::npos) break;
    start = star + 1;
  }
  return out;
}

bool factor_needs_warmup(LrFactor f) {
  return f == LrFactor::linear_warmup || f == LrFactor::rsqrt_decay ||
         f == LrFactor::rsqrt_normalized_decay || f == LrFactor::wsd;
}

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
                                      "' (known factors: " + join(lr_factor_names()) + ")");
  }
  factors_ = std::move(*f);
}

namespace {

double wsd_factor(double s, double warmup, double steps, double decay) {
  const double stable_end = steps - decay;  // W + S
  if (s < warmup) return 1.0 / warmup + (1.0 - 1.0 / warmup) * s / warmup;
  if (s < stable_end) return 1.0;
  return 1.0 - (1.0 - 1.0 / decay) * (s - stable_end) / decay;
}

double evaluate(const std::vector<LrFactor>& factors, double base, double warmup,
                double steps_per_cycle, double steps, double decay_steps, int64_t step) {
  if (step < 0) {
    throw Error(ErrorKind::internal,
                "learning rate requested for negative update counter " + std::to_string(step));
  }
  const double s = static_cast<double>(step);
  double ret = 1.0;
  for (LrFactor f : factors) {
    switch (f) {
      case LrFactor::constant:
        ret *= base;
        break;
      case LrFactor::linear_warmup:
        ret *= std::min(1.0, s / warmup);
        break;
      case LrFactor::rsqrt_decay:
        ret /= std::sqrt(std::max(s, warmup));
        break;
      case LrFactor::rsqrt_normalized_decay:
        ret *= std::sqrt(warmup);
        ret /= std::sqrt(std::max(s, warmup));
        break;
      case LrFactor::decay_every:
        ret *= std::pow(kDecayEveryFactor, static_cast<double>(step / kDecayEverySteps));
        break;
      case LrFactor::cosine_decay: {
        double progress = std::max(0.0, (s - warmup) / steps_per_cycle);
        // Python's float `%`; progress >= 0, so std::fmod agrees with it.
        ret *= std::max(0.0, 0.5 * (1.0 + std::cos(kPi * std::fmod(progress, 1.0))));
        break;
      }
      case LrFactor::wsd:
        ret *= wsd_factor(s, warmup, steps, decay_steps);
        break;
    }
  }
  return ret;
}

}  // namespace

double LrSchedule::operator()(int64_t step) const {
  return evaluate(factors_, base_, warmup_, steps_per_cycle_, steps_, decay_steps_, step);
}

double learning_rate(const TrainConfig& cfg, int64_t s) {
  thread_local ParseCache cache;
  if (!cache.valid || cache.spec != cfg.schedule) {
    cache.valid = false;
    LrSchedule parsed(cfg);  // throws the descriptive error on an unknown factor
    cache.spec = cfg.schedule;
    cache.factors = parsed.factors();
    cache.valid = true;
  }
  return evaluate(cache.factors, cfg.lr, static_cast<double>(cfg.warmup),
                  static_cast<double>(cfg.steps_per_cycle), static_cast<double>(cfg.steps),
                  static_cast<double>(cfg.decay_steps), s);
}

}  // namespace lra::host
