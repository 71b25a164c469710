#include "model/mixer_call.h"

#include <sstream>
#include <string>

#include <c10/util/Exception.h>

#include "common/out_of_memory.h"
#include "common/plugin_calls.h"
#include "common/text.h"
#include "lra/status.h"

namespace lra::host {
namespace {

std::string shape(const torch::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

torch::Tensor guarded_forward(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask) {
  plugin_calls::Call call("forward");
  try {
    return mixer.forward(x, mask);
  } catch (const lra::Error& e) {
    if (e.kind() == ErrorKind::rules || e.kind() == ErrorKind::data || e.kind() == ErrorKind::memory) throw;
    plugin_calls::fail("forward", e.what());
  } catch (const c10::Error& e) {
    const std::string what = text::first_line(e.what_without_backtrace());
    // An allocation that failed is the run's size, not the plugin's fault (exit 7).
    if (is_out_of_memory(e)) plugin_calls::out_of_memory("forward", what);
    plugin_calls::fail("forward", what);
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) plugin_calls::out_of_memory("forward", e.what());
    plugin_calls::fail("forward", e.what());
  }
}

torch::Tensor call_mixer(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask) {
  const torch::Tensor y = guarded_forward(mixer, x, mask);
  if (!y.defined() || y.sizes() != x.sizes())
    plugin_calls::fail("forward", "returned " + shape(y) + " for input " + shape(x) +
                                      "; a mixer must map [B, L, D] to [B, L, D]");
  return y;
}

}  // namespace lra::host
