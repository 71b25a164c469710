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

void cuda_configure_kernels() {
  // Not cuDNN's fused attention: on the H200 (LibTorch 2.11, 2026-11-26)
  // the SDK's masked softmax attention in bfloat16 gave gradients off by more
  // than their own scale there (test_device_parity), the output being right;
  // cuDNN's SDPA backward with an attn_mask has known faults on Hopper
  // (pytorch/pytorch#196678: padded key tiles, fully masked rows). The
  // memory-efficient and flash kernels take over.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  at::globalContext().setSDPUseCuDNN(false);
#endif
}

}  // namespace lra::host
