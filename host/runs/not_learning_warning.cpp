#include "runs/not_learning_warning.h"

#include <algorithm>
#include <cmath>

#include <spdlog/fmt/fmt.h>

#include "leaderboard/scores.h"

namespace lra::host {

void NotLearningWarning::on_validation(int64_t step, double accuracy) {
  ++validations_;
  best_ = std::max(best_, accuracy);
  if (decided_ || validations_ < 3 || 4 * step < total_steps_ || n_ <= 0) return;
  decided_ = true;
  const int64_t correct = std::llround(best_ * static_cast<double>(n_));
  const double p = binomial_upper_tail(correct, n_, std::clamp(majority_, 0.0, 1.0));
  if (p < kSignificance) return;
  if (per_position_) {  // a sequence task: no summary token, and a training set a model can memorise
    message_ = fmt::format(
        "the model is not learning: after {} of {} updates the best validation accuracy, {:.2f}% of the scored "
        "positions, is not above the most frequent target's share, {:.2f}% (one-sided binomial p = {:.2g}). Likely "
        "causes: a mixer that cannot do what the task asks at this width (a fixed state too small for its "
        "recall); a training set small enough to memorise instead (training accuracy rising while validation "
        "does not); a learning rate or schedule far from the task's; a preset too short for the task",
        step, total_steps_, 100 * best_, 100 * majority_, p);
  } else {
    message_ = fmt::format(
        "the model is not learning: after {} of {} updates the best validation accuracy, {:.2f}%, is not above the "
        "validation split's majority class, {:.2f}% (one-sided binomial p = {:.2g}). Likely causes: a mixer that "
        "runs causally under CLS pooling with the summary at position 0 (the host's probe found it reading ahead; "
        "the summary token then sees no other token: docs/rules.md#causal-mixers-and-the-summary-token); a mixer "
        "whose output ignores its input; a learning rate or schedule far from the task's; a preset too short for "
        "the task",
        step, total_steps_, 100 * best_, 100 * majority_, p);
  }
  log_.warn("{}", message_);
}

}  // namespace lra::host
