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
  std::string cpu_kernels;   // on the CPU: blas_kernels_name() (device/blas_kernels.h)
  bool same_as_run = false;  // all three equal the result's timing.device, .precision and .cpu_kernels
};

VerifierSetting verifier_setting(const ReevaluateOptions& o, const nlohmann::json& result);

// The rule a recomputed accuracy is held to, in the reports' words: " (same
// device, precision, CPU kernels and build: must be identical)", or the
// tolerance and why it applies (another build of the mixer; another device,
// precision or CPU kernels).
std::string accuracy_rule_words(bool same_setting, bool same_device, double tolerance);

// ", CPU kernels OpenBLAS Prescott (here OpenBLAS SkylakeX)" where the
// kernels are what differs; empty otherwise. For the reports' facts.
std::string kernels_difference(const VerifierSetting& s, const nlohmann::json& result);

}  // namespace lra::host
