// Parity-style checks shared by every mixer plugin's test suite (the ggml
// test-backend-ops idea): load the plugin exactly as the host does, build a
// mixer, and compare it with the SDK's reference softmax attention.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lra/mixer.h"
#include "plugins/loader.h"

namespace lra::test {

// Loads build/lib/lrahost/plugins/lra_mixer_<name>.so through the host loader.
const host::LoadedPlugin& loaded_mixer(const std::string& name);
const lra::MixerPlugin& mixer_plugin(const std::string& name);
uint32_t mixer_capabilities(const std::string& name);

lra::MixerSpec small_spec(int64_t d_model = 32, int64_t heads = 4, int64_t max_len = 64, bool causal = false);

// The plugin's declared options with defaults, overridden by `options`
// (values typed like the declaration). Throws on any plugin error.
std::shared_ptr<lra::Mixer> make_mixer(const std::string& name, const lra::MixerSpec& spec,
                                       const lra::Params& options = {}, uint64_t seed = 0);

// The name of every lra_mixer_<name>.so the build produced, sorted: tests
// across all mixers need no hand-kept list to miss one.
std::vector<std::string> built_mixers();

// make_mixer for a built-in plugin; for "python", the Python plugin running
// the SDK's example softmax attention (--plugin FILE.py:CLASS with
// sdk/examples/python/softmax_attention.py:SoftmaxAttention, whose dropout is
// the host's lrahost.dropout); for "python-host", the same mixer with its
// attention computed by the host (host_attention.py:HostAttention,
// lrahost.softmax_attention). Their default options (`options` must be empty),
// the same seed and eval mode.
std::shared_ptr<lra::Mixer> build_mixer(const std::string& name, const lra::MixerSpec& spec,
                                        const lra::Params& options = {}, uint64_t seed = 0);

torch::Tensor random_input(int64_t B, int64_t L, int64_t D, uint64_t seed = 1);
// mask [B, L]: example b has lengths[b] real tokens followed by padding.
torch::Tensor lengths_mask(int64_t L, const std::vector<int64_t>& lengths);

// Softmax attention with the mixer's own projections (parameters proj.q/k/v/o,
// as registered by lra::QKVO under the name "proj").
// mask_queries: a padded query's row is uniform over every key, as LRA's
// outer-product mask makes it (the SDK's multi_head_attention, `transformer`);
// otherwise padded queries attend to the real keys like any other.
torch::Tensor reference_attention(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask,
                                  int64_t heads, bool causal, bool mask_queries = false);

// Softmax attention with the mixer's projections restricted to the [L, L]
// boolean pattern `allowed` (query row, key column): the slow, obvious
// reference for sparse patterns.
torch::Tensor dense_pattern_reference(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask,
                                      const torch::Tensor& allowed, int64_t heads);

// LRA's masking written out directly, the reference for a mixer's
// `mask_queries` option: the logits q·k/sqrt(dh) (+ `extra_logits`,
// broadcastable to [B, H, L, L]) are -1e10 wherever the pattern `allowed`
// [L, L] or the outer product of the padding masks (query real AND key real)
// says no — one bias, as LRA builds it — and -inf outside `scored` [L, L],
// the keys LRA's computation never scored (another block's, for blocked
// local attention). A padded query's row is therefore uniform over the keys
// it scores.
torch::Tensor lra_masked_reference(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask,
                                   const torch::Tensor& allowed, const torch::Tensor& scored, int64_t heads,
                                   const torch::Tensor& extra_logits = {});

// A mixer's output with `mask_queries` on against the same mixer's with it
// off: real rows equal (to 1e-6), padded rows changed (somewhere by > 1e-3).
::testing::AssertionResult only_padded_rows_differ(const torch::Tensor& with, const torch::Tensor& without,
                                                   const torch::Tensor& mask);

// A parameter or buffer of the mixer by its dotted name; throws if absent.
torch::Tensor weight(lra::Mixer& mixer, const std::string& name);

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b);
// Largest difference over real (unpadded) positions of [B, L, D] outputs.
double max_diff_real(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask);

// [B, L, D] out, finite values, and finite non-zero gradients for x and for
// every parameter that takes part.
::testing::AssertionResult shapes_finite_and_grads(lra::Mixer& m, int64_t B, int64_t L, int64_t D);

// Outputs at real positions do not change when the padded positions of x hold other values.
::testing::AssertionResult padding_invariant(lra::Mixer& m, int64_t L, int64_t D, double tol = 1e-5);

// A mixer with the `mask_keys` option (LRA's unmasked keys, the Table 1
// configuration): with mask_keys = false the mask changes nothing and padding
// is read; with the default the mask is honoured and changes the output.
::testing::AssertionResult mask_keys_false_ignores_the_mask(const std::string& name);

// The gradients of x and of every parameter, computed in float32, equal those
// of the same mixer converted to float64 (relative to each gradient's scale):
// catches float32-only kernel faults that a float64 parity test cannot see.
// Leaves the mixer in float64.
::testing::AssertionResult float32_gradients_match_float64(lra::Mixer& m, const torch::Tensor& x,
                                                           const torch::Tensor& mask, double rel_tol = 1e-3);

// Changing x at position t changes no output at a position < t.
::testing::AssertionResult no_future_leak(lra::Mixer& m, int64_t L, int64_t D, double tol = 1e-6);

}  // namespace lra::test
