// Scoped bfloat16 autocast on CUDA (a no-op elsewhere), across the LibTorch
// 1.13 and 2.x APIs.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace lra::host {

class CudaBf16Autocast {
 public:
  explicit CudaBf16Autocast(bool on) : on_(on) {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~CudaBf16Autocast() {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  // Whether a CudaBf16Autocast is on here now (the confined mixer process is
  // told, so that it runs the mixer as the verifier's backbone would).
  static bool active() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    return at::autocast::is_autocast_enabled(at::kCUDA);
#else
    return at::autocast::is_enabled();
#endif
  }
  CudaBf16Autocast(const CudaBf16Autocast&) = delete;
  CudaBf16Autocast& operator=(const CudaBf16Autocast&) = delete;

 private:
  bool on_;
};

}  // namespace lra::host
