// device/blas_kernels.h: which OpenBLAS kernels a computing command asks for.
#include <gtest/gtest.h>

#include "device/blas_kernels.h"

using lra::host::better_openblas_coretype;
using lra::host::CpuVectorUnits;

TEST(BlasKernels, PrescottsFallbackGivesWayToTheWidestKernelsTheCpuHas) {
  EXPECT_EQ(better_openblas_coretype("Prescott", CpuVectorUnits{true, true}), "SkylakeX");
  EXPECT_EQ(better_openblas_coretype("PRESCOTT", CpuVectorUnits{true, false}), "Haswell");
  EXPECT_EQ(better_openblas_coretype("prescott", CpuVectorUnits{false, false}), "");  // an SSE3 CPU: Prescott is right
}

TEST(BlasKernels, AChoiceOpenBlasMadeForAKnownCpuStands) {
  for (const char* core : {"Cooperlake", "SkylakeX", "Haswell", "Zen", "SapphireRapids", "Prescott2"})
    EXPECT_EQ(better_openblas_coretype(core, CpuVectorUnits{true, true}), "") << core;
}

TEST(BlasKernels, DescribesTheKernelsLibTorchRunsOn) {
  // Debian's LibTorch links OpenBLAS: the description names its kernels.
  const std::string d = lra::host::describe_blas_kernels();
  if (d.empty()) GTEST_SKIP() << "LibTorch without OpenBLAS";
  EXPECT_EQ(d.rfind("OpenBLAS ", 0), 0u) << d;
  EXPECT_NE(d.find(" kernels ("), std::string::npos) << d;
}
