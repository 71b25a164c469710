// The CUDA half of device/device.h; compiled only against a CUDA LibTorch.
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <string>

#include <torch/version.h>

namespace lra::host {

std::string cuda_device_name(int index) { return at::cuda::getDeviceProperties(index)->name; }

void cuda_synchronize(int index) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  c10::cuda::device_synchronize();
}

void cuda_reset_peak(int index) { c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index)); }

int64_t cuda_peak_allocated(int index) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].peak;  // [0] = the aggregate over pool types
}

void cuda_release_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

}  // namespace lra::host
