#include "device/blas_kernels.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

// Present when LibTorch links OpenBLAS; null otherwise (MKL builds, CUDA wheels).
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace lra::host {
namespace {

constexpr const char* kCoretypeVariable = "OPENBLAS_CORETYPE";

char** program_arguments = nullptr;

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

CpuVectorUnits detect_cpu_vector_units() {
  CpuVectorUnits u;
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's checks include the OS's saving of the wide registers (XGETBV).
  __builtin_cpu_init();
  u.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  u.avx512_skx = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  return u;
}

std::string better_openblas_coretype(std::string_view openblas_core, const CpuVectorUnits& cpu) {
  if (!same_name(openblas_core, "Prescott")) return {};
  if (cpu.avx512_skx) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return {};
}

void remember_program_arguments(char** argv) { program_arguments = argv; }

void load_best_blas_kernels() {
  static bool tried = false;
  if (tried || !program_arguments || !openblas_get_corename || std::getenv(kCoretypeVariable)) return;
  tried = true;
  const std::string coretype = better_openblas_coretype(openblas_get_corename(), detect_cpu_vector_units());
  if (coretype.empty()) return;
  ::setenv(kCoretypeVariable, coretype.c_str(), 1);
  ::execv("/proc/self/exe", program_arguments);
  // Only on failure (no /proc): run on the kernels loaded; children still get the variable.
}

std::string blas_kernels_name() {
  return openblas_get_corename ? "OpenBLAS " + std::string(openblas_get_corename()) : std::string();
}

std::string describe_blas_kernels() {
  const std::string name = blas_kernels_name();
  if (name.empty()) return {};
  const char* set = std::getenv(kCoretypeVariable);
  return name + " kernels (" +
         (set ? std::string(kCoretypeVariable) + "=" + set : std::string("chosen by OpenBLAS")) + ")";
}

}  // namespace lra::host
