#include "device/device.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <torch/cuda.h>

#include "lra/status.h"

// tcmalloc's C API, present when lrahost links tcmalloc (lra_fast_malloc);
// weak so the host also runs with glibc's malloc.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace lra::host {

#ifdef LRA_WITH_CUDA
// device_cuda.cpp
std::string cuda_device_name(int index);
void cuda_synchronize(int index);
void cuda_reset_peak(int index);
int64_t cuda_peak_allocated(int index);
void cuda_release_cache();
#endif

namespace {

int index_of(const c10::Device& d) { return d.has_index() ? d.index() : 0; }

// Linux resets the process's peak RSS (VmHWM) when "5" is written to
// /proc/self/clear_refs (since 4.0); false where that is not allowed.
bool cpu_peak_resettable = true;

int64_t vm_hwm_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  123456 kB"
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

std::string describe_device(const c10::Device& d) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) return "cuda:" + std::to_string(index_of(d)) + " (" + cuda_device_name(index_of(d)) + ")";
#endif
  return d.str();
}

void synchronize_device(const c10::Device& d) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) cuda_synchronize(index_of(d));
#else
  (void)d;
#endif
}

void reset_peak_memory(const c10::Device& d) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) return cuda_reset_peak(index_of(d));
#endif
  // Freed memory the allocator keeps would stay resident and count towards the
  // next configuration's peak: hand it back to the OS first.
  if (MallocExtension_ReleaseFreeMemory) MallocExtension_ReleaseFreeMemory();
  malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  cpu_peak_resettable = static_cast<bool>(out);
}

int64_t peak_memory_bytes(const c10::Device& d) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) return cuda_peak_allocated(index_of(d));
#else
  (void)d;
#endif
  return vm_hwm_bytes();
}

std::string peak_memory_kind(const c10::Device& d) {
  if (d.is_cuda()) return "cuda allocator peak";
  return cpu_peak_resettable ? "process peak RSS" : "process peak RSS since start (could not be reset)";
}

void release_cached_memory(const c10::Device& d) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) cuda_release_cache();
#else
  (void)d;
#endif
}

std::optional<double> peak_flops(const c10::Device& d, bool bf16) {
#ifdef LRA_WITH_CUDA
  if (d.is_cuda()) {
    const std::string name = cuda_device_name(index_of(d));
    // NVIDIA H100/H200 SXM data sheets, dense (no sparsity): bf16 989.4 TFLOP/s,
    // fp32 66.9 TFLOP/s (TF32 tensor cores are not enabled by default).
    if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos)
      return bf16 ? 989.4e12 : 66.9e12;
  }
#else
  (void)d;
  (void)bf16;
#endif
  return std::nullopt;
}

c10::Device pick_device(const std::string& want) {
  if (want == "cpu") return c10::kCPU;
  if (want == "cuda" && !torch::cuda::is_available())
    throw Error(ErrorKind::usage, "--device cuda: this lrahost was built against a LibTorch without CUDA or no GPU is "
                                  "visible; use --device cpu or auto");
  if (!torch::cuda::is_available()) return c10::kCPU;
  return c10::kCUDA;
}

int effective_threads(int requested) {
  if (requested > 0) return requested;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace lra::host
