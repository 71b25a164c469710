#include "reevaluation/verifier_setting.h"

#include "common/json_input.h"
#include "device/blas_kernels.h"
#include "device/device.h"
#include "reevaluation/private_set.h"

namespace lra::host {

VerifierSetting verifier_setting(const ReevaluateOptions& o, const nlohmann::json& result) {
  VerifierSetting s;
  const c10::Device device = pick_device(o.device);
  s.device = describe_device(device);
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  s.precision =
      cuda && json_text_at(result, {"timing", "precision"}) == "bfloat16 autocast" ? "bfloat16 autocast" : "float32";
  // Other BLAS kernels round differently: the same CPU is the same setting
  // only on the same kernels (a result without timing.cpu_kernels predates
  // the record, or computed on another library).
  if (device.is_cpu()) s.cpu_kernels = blas_kernels_name();
  s.same_as_run = s.device == json_text_at(result, {"timing", "device"}) &&
                  s.precision == json_text_at(result, {"timing", "precision"}) &&
                  (s.cpu_kernels.empty() || s.cpu_kernels == json_text_at(result, {"timing", "cpu_kernels"}));
  return s;
}

std::string accuracy_rule_words(bool same_setting, bool same_device, double tolerance) {
  if (same_setting) return " (same device, precision, CPU kernels and build: must be identical)";
  return std::string(same_device ? " (another build of the mixer" : " (different device, precision or CPU kernels") +
         ": allowed difference " + percent(tolerance) + ")";
}

std::string kernels_difference(const VerifierSetting& s, const nlohmann::json& result) {
  const std::string recorded = json_text_at(result, {"timing", "cpu_kernels"});
  if (s.cpu_kernels.empty() || recorded == s.cpu_kernels) return {};
  return ", CPU kernels " + (recorded.empty() ? std::string("not recorded") : recorded) + " (here " + s.cpu_kernels + ")";
}

}  // namespace lra::host
