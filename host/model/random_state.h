// model/random_state.h — host bookkeeping that builds a throwaway model
// (counting a reference Transformer, probing a mixer) puts the global CPU
// generator back as it found it, so a run's own model and data draw the same
// random stream whether or not the bookkeeping ran.
#pragma once

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

namespace lra::host {

// The global CPU generator's state, read and set under its lock (set_state
// throws c10::Error for a tensor that is no state).
inline at::Tensor cpu_generator_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}
inline void set_cpu_generator_state(const at::Tensor& state) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

class PreservedRandomState {
 public:
  PreservedRandomState() : state_(cpu_generator_state()) {}
  ~PreservedRandomState() { set_cpu_generator_state(state_); }
  PreservedRandomState(const PreservedRandomState&) = delete;
  PreservedRandomState& operator=(const PreservedRandomState&) = delete;

 private:
  at::Tensor state_;
};

}  // namespace lra::host
