// device/blas_kernels.h — which OpenBLAS kernels LibTorch's matrix products run
// on the CPU.
//
// OpenBLAS picks its kernels by CPU model once, when it loads, and falls back
// to Prescott's (SSE3) for a model newer than itself: Debian 12's 0.3.21 on an
// Emerald Rapids Xeon (family 6, model 207) multiplies 2.5x slower than with
// its AVX-512 kernels (docs/performance.md). It reads OPENBLAS_CORETYPE only
// as it loads, so a command that computes starts itself again with the
// variable set, before it does anything else.
#pragma once

#include <string>
#include <string_view>

namespace lra::host {

struct CpuVectorUnits {
  bool avx2_fma = false;    // AVX2 and FMA: OpenBLAS's Haswell kernels
  bool avx512_skx = false;  // AVX-512 F, BW, DQ and VL: its SkylakeX kernels
};
// This CPU's, as far as the OS lets programs use them.
CpuVectorUnits detect_cpu_vector_units();

// The OPENBLAS_CORETYPE to load with when OpenBLAS chose Prescott's kernels
// (its fallback for a CPU it does not know) on a CPU with better ones; empty
// when its choice stands.
std::string better_openblas_coretype(std::string_view openblas_core, const CpuVectorUnits& cpu);

// main() hands over its arguments; a command that computes calls
// load_best_blas_kernels() before any other work. When LibTorch runs on
// OpenBLAS, OPENBLAS_CORETYPE is unset and better_openblas_coretype() names a
// type, it sets the variable and executes the program again with the same
// arguments (children inherit it); otherwise, or when that exec fails, it
// returns and the command runs on the kernels it has.
void remember_program_arguments(char** argv);
void load_best_blas_kernels();

// What a CPU result records (timing.cpu_kernels) and a re-evaluation
// compares: "OpenBLAS SkylakeX"; empty without OpenBLAS.
std::string blas_kernels_name();

// For run.log: "OpenBLAS SkylakeX kernels (OPENBLAS_CORETYPE=SkylakeX)" or
// "OpenBLAS Haswell kernels (chosen by OpenBLAS)"; empty without OpenBLAS.
std::string describe_blas_kernels();

}  // namespace lra::host
