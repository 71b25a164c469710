// reevaluation/verifier_setting.h: when a re-evaluation's numbers must equal
// the run's (the same device, precision and CPU kernels) and when the
// tolerance applies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "device/blas_kernels.h"
#include "reevaluation/verifier_setting.h"

using lra::host::blas_kernels_name;
using lra::host::kernels_difference;
using lra::host::ReevaluateOptions;
using lra::host::verifier_setting;
using nlohmann::json;

namespace {

json cpu_result(const json& kernels) {
  json timing = {{"device", "cpu"}, {"precision", "float32"}};
  if (!kernels.is_null()) timing["cpu_kernels"] = kernels;
  return {{"timing", timing}};
}

ReevaluateOptions on_cpu() {
  ReevaluateOptions o;
  o.device = "cpu";
  return o;
}

}  // namespace

TEST(VerifierSetting, TheSameCpuOnTheSameKernelsIsTheRunsSetting) {
  const auto s = verifier_setting(on_cpu(), cpu_result(blas_kernels_name()));
  EXPECT_TRUE(s.same_as_run);
  EXPECT_EQ(s.cpu_kernels, blas_kernels_name());
  EXPECT_EQ(kernels_difference(s, cpu_result(blas_kernels_name())), "");
}

TEST(VerifierSetting, OtherKernelsOrNoRecordOfThemGetTheTolerance) {
  if (blas_kernels_name().empty()) GTEST_SKIP() << "LibTorch without OpenBLAS: the kernels are not compared";
  const std::string other = blas_kernels_name() == "OpenBLAS Prescott" ? "OpenBLAS Haswell" : "OpenBLAS Prescott";
  const auto s = verifier_setting(on_cpu(), cpu_result(other));
  EXPECT_FALSE(s.same_as_run);
  EXPECT_EQ(kernels_difference(s, cpu_result(other)), ", CPU kernels " + other + " (here " + blas_kernels_name() + ")");
  // A result written before timing.cpu_kernels was recorded.
  const auto old = verifier_setting(on_cpu(), cpu_result(nullptr));
  EXPECT_FALSE(old.same_as_run);
  EXPECT_EQ(kernels_difference(old, cpu_result(nullptr)),
            ", CPU kernels not recorded (here " + blas_kernels_name() + ")");
}

TEST(VerifierSetting, AnotherDeviceIsNeverTheRunsSetting) {
  json r = cpu_result(blas_kernels_name());
  r["timing"]["device"] = "cuda:0 (NVIDIA H100 80GB HBM3)";
  EXPECT_FALSE(verifier_setting(on_cpu(), r).same_as_run);
}
