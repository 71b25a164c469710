// runs/not_learning_warning.h — a warning, once, when a run's validation
// accuracy has not beaten the validation split's majority class a quarter of
// the way through training (at least three validations in), by a one-sided
// exact binomial test. It names the likely causes, first among them a mixer
// that runs causally under CLS pooling.
#pragma once

#include <cstdint>
#include <string>

#include <spdlog/logger.h>

namespace lra::host {

class NotLearningWarning {
 public:
  // The warning fires when p >= kSignificance.
  static constexpr double kSignificance = 0.05;

  // `val_examples`: what the validation accuracy counts, and the rate of its
  // most frequent label; for a sequence task (`per_position`) its scored
  // positions and most frequent target.
  NotLearningWarning(int64_t total_steps, int64_t val_examples, double val_majority_rate, spdlog::logger& log,
                     bool per_position = false)
      : total_steps_(total_steps), n_(val_examples), majority_(val_majority_rate), log_(log),
        per_position_(per_position) {}

  // After every validation: decides once, at the first validation that is at
  // least the third and at or past a quarter of the steps.
  void on_validation(int64_t step, double accuracy);

  const std::string& message() const { return message_; }  // "" unless it warned

 private:
  int64_t total_steps_, n_;
  double majority_;
  spdlog::logger& log_;
  bool per_position_ = false;
  int validations_ = 0;
  double best_ = 0;
  bool decided_ = false;
  std::string message_;
};

}  // namespace lra::host
