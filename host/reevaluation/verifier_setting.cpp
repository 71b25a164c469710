#include "reevaluation/verifier_setting.h"

#include "common/json_input.h"
#include "device/device.h"

namespace lra::host {

VerifierSetting verifier_setting(const ReevaluateOptions& o, const nlohmann::json& result) {
  VerifierSetting s;
  s.device = describe_device(pick_device(o.device));
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  s.precision =
      cuda && json_text_at(result, {"timing", "precision"}) == "bfloat16 autocast" ? "bfloat16 autocast" : "float32";
  s.same_as_run = s.device == json_text_at(result, {"timing", "device"}) &&
                  s.precision == json_text_at(result, {"timing", "precision"});
  return s;
}

}  // namespace lra::host
