// reevaluation/verifier_setting.h — the device and precision a re-evaluation
// runs in (the verifier's own, never the result's), and whether they are
// the run's: what decides how close the verifier's numbers must be to the
// recorded ones (the test accuracy, the fine-tuning replay).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reevaluation/reevaluate.h"

namespace lra::host {

struct VerifierSetting {
  std::string device;     // describe_device of the verifier's --device
  std::string precision;  // "bfloat16 autocast" only where the run used it and the verifier is on CUDA
  bool same_as_run = false;  // both equal the result's timing.device and timing.precision
};

VerifierSetting verifier_setting(const ReevaluateOptions& o, const nlohmann::json& result);

}  // namespace lra::host
