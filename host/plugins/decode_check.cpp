// plugins/decode_check.cpp — see decode_check.h.
#include "plugins/decode_check.h"

#include <algorithm>
#include <cstdio>

#include <torch/torch.h>

#include "common/out_of_memory.h"
#include "common/plugin_calls.h"
#include "common/text.h"
#include "model/mixer_call.h"

namespace lra::host {
namespace {

// One decoding call, marked as plugin code: an exception is a plugin fault in `what`.
template <typename Fn>
auto plugin_call(const char* what, Fn&& fn) {
  plugin_calls::Call call(what);
  try {
    return fn();
  } catch (const lra::Error& e) {
    if (e.kind() == ErrorKind::rules || e.kind() == ErrorKind::data || e.kind() == ErrorKind::memory) throw;
    plugin_calls::fail(what, e.what());
  } catch (const c10::Error& e) {
    const std::string why = text::first_line(e.what_without_backtrace());
    if (is_out_of_memory(e)) plugin_calls::out_of_memory(what, why);
    plugin_calls::fail(what, why);
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) plugin_calls::out_of_memory(what, e.what());
    plugin_calls::fail(what, e.what());
  }
}

// The forward and the steps of `m` (on `device`, in evaluation mode, its
// tensors in `dtype`) over the same random inputs; throws lra::Error(plugin)
// when the plugin fails in that precision. `layer` names the block in the detail.
ConformanceCheck compare_steps(lra::Mixer& m, int64_t L, int64_t D, int64_t layer, const c10::Device& device,
                               uint64_t seed, int64_t batch, torch::Dtype dtype, bool has_prefill) {
  ConformanceCheck c;
  c.name = "decode";
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  torch::manual_seed(seed + 1);
  const auto x = torch::randn({batch, L, D}, options);
  torch::manual_seed(seed + 2);
  const torch::Tensor y = guarded_forward(m, x, torch::Tensor());
  const std::string precision = dtype == torch::kDouble ? "float64" : "float32";
  if (!y.defined() || y.sizes() != x.sizes() || y.scalar_type() != dtype)
    throw Error(ErrorKind::plugin, "causal forward in " + precision + " gave no [B, L, D] output of that precision");
  // The largest |a - b| in float64; a NaN counts as infinitely far.
  auto gap = [](const torch::Tensor& a, const torch::Tensor& b) {
    auto d = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs();
    return torch::where(torch::isnan(d), torch::full_like(d, INFINITY), d).max().item<double>();
  };
  auto state = plugin_call("decode_start", [&] { return m.decode_start(batch, options); });
  const auto scale = std::max(1.0, y.abs().max().item<double>());
  c.tolerance = (dtype == torch::kDouble ? kDecodeToleranceFloat64 : kDecodeToleranceFloat32) * scale;
  for (int64_t t = 0; t < L; ++t) {
    torch::manual_seed(seed + 2);
    const torch::Tensor yt = plugin_call("decode_step", [&] { return m.decode_step(x.select(1, t), state, t); });
    if (!yt.defined() || yt.dim() != 2 || yt.size(0) != batch || yt.size(1) != D) {
      c.status = "failed";
      c.detail = "decode_step at position " + std::to_string(t) + " returned " +
                 (yt.defined() ? "a tensor of " + std::to_string(yt.dim()) + " dimensions" : "an undefined tensor") +
                 ", expected [B, D] = [" + std::to_string(batch) + ", " + std::to_string(D) + "]";
      return c;
    }
    const double diff = gap(yt, y.select(1, t));
    c.difference = std::max(c.difference, diff);
    if (diff > c.tolerance) {
      c.status = "failed";
      c.difference = diff;
      c.detail = "decode_step at position " + std::to_string(t) + " differs from the causal forward's output there by " +
                 text::short_number(diff) + " (tolerance " + text::short_number(c.tolerance) + ", " + precision + ", " +
                 std::to_string(L) + " positions of random inputs, layer " + std::to_string(layer) +
                 "; positions 0.." + std::to_string(t) +
                 " fed one at a time from decode_start): the steps must give what forward gives over the same tokens "
                 "(keep the context in the state), or decodes() must return false";
      return c;
    }
  }
  // The state is all the steps keep (a value): a copy of it at position F,
  // continued on other inputs with its steps interleaved with the original's,
  // gives the forward of its own sequence. A mixer that keeps its context
  // elsewhere (in the object, in a table keyed by the state) mixes the two, and
  // the size of its state would not be its memory (plugins/state_size.h).
  const int64_t F = L / 2;
  auto original = plugin_call("decode_start", [&] { return m.decode_start(batch, options); });
  for (int64_t t = 0; t < F; ++t) {
    torch::manual_seed(seed + 2);
    plugin_call("decode_step", [&] { return m.decode_step(x.select(1, t), original, t); });
  }
  std::vector<torch::Tensor> copy;
  for (const auto& s : original) copy.push_back(s.defined() ? s.clone() : s);
  torch::manual_seed(seed + 3);
  const auto other = torch::cat({x.narrow(1, 0, F), torch::randn({batch, L - F, D}, options)}, 1);
  torch::manual_seed(seed + 2);
  const torch::Tensor y_other = guarded_forward(m, other, torch::Tensor());
  for (int64_t t = F; t < L; ++t) {
    torch::manual_seed(seed + 2);
    const torch::Tensor ya = plugin_call("decode_step", [&] { return m.decode_step(x.select(1, t), original, t); });
    torch::manual_seed(seed + 2);
    const torch::Tensor yb = plugin_call("decode_step", [&] { return m.decode_step(other.select(1, t), copy, t); });
    const double diff = std::max(gap(ya, y.select(1, t)), gap(yb, y_other.select(1, t)));
    if (diff > c.tolerance) {
      c.status = "failed";
      c.difference = diff;
      c.detail = "decode_step from a copy of the state at position " + std::to_string(F) + ", on other inputs and " +
                 "called in turn with the original, differs from the causal forward of its own sequence by " +
                 text::short_number(diff) + " at position " + std::to_string(t) + " (tolerance " +
                 text::short_number(c.tolerance) + ", " + precision + ", layer " + std::to_string(layer) +
                 "): the state decode_step is given must hold all it keeps (no context in the mixer object or "
                 "elsewhere), or decodes() must return false";
      return c;
    }
  }
  c.status = "passed";
  c.detail = "decode_start + " + std::to_string(L) + " decode_step calls give the causal forward's outputs (" +
             precision + ", largest difference " + text::short_number(c.difference) + "), also from a copy of the " +
             "state on other inputs";
  // A parallel prefill (SDK 1.6) of the first half, then steps over the rest:
  // its outputs are the forward's rows, and its state is the one the steps
  // would have left (the steps after it give the forward's rows too).
  if (!has_prefill || !plugin_call("prefills_in_parallel", [&] { return m.prefills_in_parallel(); })) return c;
  const int64_t P = L / 2;
  auto fresh = plugin_call("decode_start", [&] { return m.decode_start(batch, options); });
  torch::manual_seed(seed + 2);
  const torch::Tensor yp = plugin_call("prefill", [&] { return m.prefill(x.narrow(1, 0, P), fresh); });
  auto fail = [&](const std::string& what) {
    c.status = "failed";
    c.detail = what + " (" + precision + ", " + std::to_string(L) + " positions of random inputs, layer " +
               std::to_string(layer) + "): prefill must leave the state the steps leave and return forward's rows, "
               "or prefills_in_parallel() must return false";
    return c;
  };
  if (!yp.defined() || yp.sizes() != x.narrow(1, 0, P).sizes())
    return fail("prefill of " + std::to_string(P) + " positions returned no [B, " + std::to_string(P) + ", D] tensor");
  if (P > 0)
    if (const double diff = gap(yp, y.narrow(1, 0, P)); diff > c.tolerance)
      return fail("prefill's outputs differ from the causal forward's by " + text::short_number(diff) + " (tolerance " +
                  text::short_number(c.tolerance) + ")");
  for (int64_t t = P; t < L; ++t) {
    torch::manual_seed(seed + 2);
    const torch::Tensor yt = plugin_call("decode_step", [&] { return m.decode_step(x.select(1, t), fresh, t); });
    if (const double diff = gap(yt, y.select(1, t)); diff > c.tolerance)
      return fail("after prefill of positions 0.." + std::to_string(P - 1) + ", decode_step at position " +
                  std::to_string(t) + " differs from the causal forward's output there by " + text::short_number(diff) +
                  " (tolerance " + text::short_number(c.tolerance) + "): the prefilled state is not the steps' state");
  }
  c.detail += "; a parallel prefill of " + std::to_string(P) + " positions leaves the steps' state";
  return c;
}

// A fresh mixer from `make`, compared in `dtype`.
ConformanceCheck compare(const MixerMaker& make, const lra::MixerSpec& spec, const c10::Device& device, uint64_t seed,
                         int64_t batch, torch::Dtype dtype, bool has_prefill) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  std::shared_ptr<lra::Mixer> m = make(spec);
  m->to(device);
  m->to(dtype);
  m->eval();
  const bool decodes = plugin_call("decodes", [&] { return m->decodes(); });
  if (!decodes) {
    ConformanceCheck c;
    c.name = "decode";
    c.detail = "not declared: decodes() is false (bench --decode recomputes the causal forward instead)";
    return c;
  }
  return compare_steps(*m, std::min<int64_t>(spec.max_len, kDecodeParityPositions), spec.d_model, spec.layer_index,
                       device, seed, batch, dtype, has_prefill);
}

// Puts LibTorch's generators back as they were when it was made.
struct RewindGenerators {
  GeneratorStates saved;
  ~RewindGenerators() { saved.rewind(); }
};

}  // namespace

ConformanceCheck check_decode_parity(const MixerMaker& make, lra::MixerSpec spec, const c10::Device& device,
                                     uint64_t seed, int64_t batch, bool has_prefill) {
  spec.causal = true;
  // The check reseeds the generators; a run it guards draws afterwards exactly
  // what it would have drawn without it (as the other conformance checks do).
  const RewindGenerators rewind;
  plugin_calls::set_phase("decode check", 0);
  // float64 where the mixer computes in it; a mixer that cannot (a float-only
  // kernel, a Python module that keeps float32 weights) is compared in float32.
  try {
    return compare(make, spec, device, seed, batch, torch::kDouble, has_prefill);
  } catch (const lra::Error& e) {
    if (e.kind() != ErrorKind::plugin) throw;
  }
  return compare(make, spec, device, seed, batch, torch::kFloat, has_prefill);
}

ConformanceCheck enforce_decode_parity(const std::string& plugin, const MixerMaker& make, const lra::MixerSpec& spec,
                                       const c10::Device& device, uint64_t seed, int64_t batch, bool has_prefill) {
  ConformanceCheck c = check_decode_parity(make, spec, device, seed, batch, has_prefill);
  if (c.status == "failed")
    throw Error(ErrorKind::plugin, "plugin '" + plugin + "' failed the conformance check 'decode': " + c.detail +
                                       " (docs/abi.md#conformance-checks)");
  return c;
}

ConformanceCheck check_decode_steps(lra::Mixer& mixer, int64_t d_model, int64_t layer, const c10::Device& device,
                                    uint64_t seed, int64_t batch) {
  const RewindGenerators rewind;
  return compare_steps(mixer, kDecodeParityPositions, d_model, layer, device, seed, batch, torch::kFloat, false);
}

}  // namespace lra::host
