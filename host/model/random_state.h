// model/random_state.h — host bookkeeping that builds a throwaway model
// (counting a reference Transformer, probing a mixer) puts the global CPU
// generator back as it found it, so a run's own model and data draw the same
// random stream whether or not the bookkeeping ran.
#pragma once

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

namespace lra::host {

class PreservedRandomState {
 public:
  PreservedRandomState() : gen_(at::detail::getDefaultCPUGenerator()) {
    const std::lock_guard<std::mutex> lock(gen_.mutex());
    state_ = gen_.get_state();
  }
  ~PreservedRandomState() {
    const std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(state_);
  }
  PreservedRandomState(const PreservedRandomState&) = delete;
  PreservedRandomState& operator=(const PreservedRandomState&) = delete;

 private:
  at::Generator gen_;
  at::Tensor state_;
};

}  // namespace lra::host
