#include "mixer_harness.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <regex>

#include "plugins/mixer_options.h"
#include "lra/attention.h"
#include "plugins/loader.h"

namespace lra::test {

const host::LoadedPlugin& loaded_mixer(const std::string& name) {
  return host::load_plugin(std::string(LRA_PLUGIN_DIR) + "/lra_mixer_" + name + ".so", LRA_KIND_MIXER);
}

torch::Tensor weight(lra::Mixer& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  for (const auto& b : m.named_buffers())
    if (b.key() == name) return b.value();
  throw std::runtime_error("mixer has no parameter or buffer '" + name +
                           "' (reference parity needs lra::QKVO named 'proj')");
}

const lra::MixerPlugin& mixer_plugin(const std::string& name) { return loaded_mixer(name).mixer(); }
uint32_t mixer_capabilities(const std::string& name) { return loaded_mixer(name).descriptor.capabilities; }

lra::MixerSpec small_spec(int64_t d_model, int64_t heads, int64_t max_len, bool causal) {
  lra::MixerSpec s;
  s.d_model = d_model;
  s.heads = heads;
  s.qkv_dim = d_model;
  s.max_len = max_len;
  s.causal = causal;
  s.attention_dropout = 0.0;
  return s;
}

std::shared_ptr<lra::Mixer> make_mixer(const std::string& name, const lra::MixerSpec& spec,
                                       const lra::Params& options, uint64_t seed) {
  std::map<std::string, std::string> given;
  for (const auto& [k, v] : options) given[k] = lra::to_string(v);
  const lra::Params resolved = host::resolve_mixer_options(loaded_mixer(name), given);
  torch::manual_seed(seed);
  std::shared_ptr<lra::Mixer> m;
  auto st = mixer_plugin(name).create(spec, resolved, &m);
  if (!st.ok()) throw lra::Error(st.kind, st.message);
  m->eval();  // no dropout in parity checks
  return m;
}

std::vector<std::string> built_mixers() {
  std::vector<std::string> names;
  const std::regex file("lra_mixer_(.+)\\.so");
  for (const auto& e : std::filesystem::directory_iterator(LRA_PLUGIN_DIR)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (std::regex_match(f, m, file)) names.push_back(m[1]);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<lra::Mixer> build_mixer(const std::string& name, const lra::MixerSpec& spec,
                                        const lra::Params& options, uint64_t seed) {
  if (name != "python" && name != "python-host") return make_mixer(name, spec, options, seed);
  if (!options.empty()) throw std::invalid_argument("build_mixer: the example Python mixers take no options");
  const std::string example = name == "python" ? "softmax_attention.py:SoftmaxAttention"
                                               : "host_attention.py:HostAttention";
  const auto& p = host::load_plugin(std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/" + example, LRA_KIND_MIXER);
  torch::manual_seed(seed);
  std::shared_ptr<lra::Mixer> m;
  const auto st = p.mixer().create(spec, host::resolve_mixer_options(p, {}), &m);
  if (!st.ok()) throw lra::Error(st.kind, st.message);
  m->eval();
  return m;
}

torch::Tensor random_input(int64_t B, int64_t L, int64_t D, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({B, L, D});
}

torch::Tensor lengths_mask(int64_t L, const std::vector<int64_t>& lengths) {
  auto m = torch::zeros({static_cast<int64_t>(lengths.size()), L}, torch::kBool);
  for (size_t b = 0; b < lengths.size(); ++b) m[b].narrow(0, 0, lengths[b]).fill_(true);
  return m;
}

torch::Tensor reference_attention(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, int64_t heads,
                                  bool causal, bool mask_queries) {
  auto q = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);
  auto v = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.v.weight").t()), heads);
  auto out = lra::ops::softmax_attention(q, k, v, mask, causal, 0.0, false, nullptr, {},
                                         mask_queries && !causal ? mask : torch::Tensor());
  return torch::matmul(lra::ops::merge_heads(out), weight(m, "proj.o.weight").t());
}

torch::Tensor dense_pattern_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask,
                                      const torch::Tensor& allowed, int64_t heads) {
  auto q = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);
  auto v = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.v.weight").t()), heads);
  auto bias = torch::zeros(allowed.sizes()).masked_fill(allowed.logical_not(), lra::ops::kMaskedLogit);
  auto out = lra::ops::softmax_attention(q, k, v, mask, false, 0.0, false, nullptr, bias);
  return torch::matmul(lra::ops::merge_heads(out), weight(m, "proj.o.weight").t());
}

torch::Tensor lra_masked_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask,
                                   const torch::Tensor& allowed, const torch::Tensor& scored, int64_t heads,
                                   const torch::Tensor& extra_logits) {
  auto q = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);
  auto v = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.v.weight").t()), heads);
  auto logits = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (extra_logits.defined()) logits = logits + extra_logits;
  const auto real = mask.to(torch::kBool);
  auto ok = allowed.view({1, 1, allowed.size(0), allowed.size(1)})
                .logical_and(real.unsqueeze(1).unsqueeze(-1))   // the query
                .logical_and(real.unsqueeze(1).unsqueeze(2));   // the key
  logits = logits.masked_fill(ok.logical_not(), lra::ops::kMaskedLogit)
               .masked_fill(scored.logical_not().view({1, 1, scored.size(0), scored.size(1)}),
                            -std::numeric_limits<double>::infinity());
  auto out = torch::matmul(torch::softmax(logits, -1), v);
  return torch::matmul(lra::ops::merge_heads(out), weight(m, "proj.o.weight").t());
}

::testing::AssertionResult only_padded_rows_differ(const torch::Tensor& with, const torch::Tensor& without,
                                                   const torch::Tensor& mask) {
  const double real = max_diff_real(with, without, mask), any = max_abs_diff(with, without);
  if (!(real < 1e-6)) return ::testing::AssertionFailure() << "real rows changed by " << real;
  if (!(any > 1e-3)) return ::testing::AssertionFailure() << "padded rows did not change (" << any << ")";
  return ::testing::AssertionSuccess();
}

double max_diff_real(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  return (a - b).abs().masked_select(mask.unsqueeze(-1).expand_as(a)).max().item<double>();
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

::testing::AssertionResult shapes_finite_and_grads(lra::Mixer& m, int64_t B, int64_t L, int64_t D) {
  auto x = random_input(B, L, D).requires_grad_(true);
  auto mask = lengths_mask(L, std::vector<int64_t>(B, L));
  auto y = m.forward(x, mask);
  if (y.sizes() != x.sizes())
    return ::testing::AssertionFailure() << "output shape " << y.sizes() << " for input " << x.sizes();
  if (!torch::isfinite(y).all().item<bool>()) return ::testing::AssertionFailure() << "non-finite output";
  y.pow(2).sum().backward();
  if (!x.grad().defined() || !torch::isfinite(x.grad()).all().item<bool>() || x.grad().abs().sum().item<double>() == 0)
    return ::testing::AssertionFailure() << "missing, non-finite or zero gradient for x";
  for (const auto& p : m.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const auto& g = p.value().grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>())
      return ::testing::AssertionFailure() << "non-finite gradient for " << p.key();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult padding_invariant(lra::Mixer& m, int64_t L, int64_t D, double tol) {
  torch::NoGradGuard g;
  const std::vector<int64_t> lengths = {L, L / 2 + 3, L / 3};
  auto mask = lengths_mask(L, lengths);
  auto x = random_input(3, L, D, 2);
  auto noisy = x.clone();
  noisy.masked_scatter_(mask.logical_not().unsqueeze(-1).expand_as(noisy), torch::randn_like(noisy) * 10);
  auto a = m.forward(x, mask), b = m.forward(noisy, mask);
  auto real = mask.unsqueeze(-1).expand_as(a);
  const double diff = (a - b).abs().masked_select(real).max().item<double>();
  if (diff > tol) return ::testing::AssertionFailure() << "real-token outputs moved by " << diff << " (tol " << tol << ")";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult mask_keys_false_ignores_the_mask(const std::string& name) {
  auto lra_like = make_mixer(name, small_spec(), {{"mask_keys", false}});
  lra_like->eval();
  auto masked = make_mixer(name, small_spec());
  masked->eval();
  if (!padding_invariant(*masked, 48, 32)) return ::testing::AssertionFailure() << "the default must honour the mask";
  if (padding_invariant(*lra_like, 48, 32))
    return ::testing::AssertionFailure() << "padding must be read when mask_keys = false";
  torch::NoGradGuard no_grad;
  const auto x = random_input(3, 48, 32);
  const auto mask = lengths_mask(48, {48, 31, 7});
  const double unmasked = max_abs_diff(lra_like->forward(x, mask), lra_like->forward(x, torch::Tensor()));
  if (!(unmasked < 1e-6))
    return ::testing::AssertionFailure() << "mask_keys = false: the mask moved the output by " << unmasked;
  const double honoured = max_abs_diff(masked->forward(x, mask), masked->forward(x, torch::Tensor()));
  if (!(honoured > 1e-4))
    return ::testing::AssertionFailure() << "the default: the mask moved the output by only " << honoured;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult float32_gradients_match_float64(lra::Mixer& m, const torch::Tensor& x,
                                                           const torch::Tensor& mask, double rel_tol) {
  torch::manual_seed(5);
  auto probe = torch::randn(x.sizes(), torch::kFloat64);
  auto grads = [&](torch::ScalarType t) {
    m.to(t);
    m.zero_grad();
    auto xi = x.to(t).detach().requires_grad_(true);
    (m.forward(xi, mask) * probe.to(t)).sum().backward();
    std::vector<std::pair<std::string, torch::Tensor>> g = {{"x", xi.grad().to(torch::kFloat64)}};
    for (const auto& p : m.named_parameters())
      if (p.value().grad().defined()) g.emplace_back(p.key(), p.value().grad().to(torch::kFloat64).clone());
    return g;
  };
  const auto g32 = grads(torch::kFloat32), g64 = grads(torch::kFloat64);
  if (g32.size() != g64.size()) return ::testing::AssertionFailure() << "different parameters got gradients";
  for (size_t i = 0; i < g32.size(); ++i) {
    const double scale = std::max(1.0, g64[i].second.abs().max().item<double>());
    const double diff = max_abs_diff(g32[i].second, g64[i].second);
    if (!(diff <= rel_tol * scale))
      return ::testing::AssertionFailure() << "gradient of " << g32[i].first << ": float32 differs from float64 by "
                                           << diff << " (scale " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult no_future_leak(lra::Mixer& m, int64_t L, int64_t D, double tol) {
  torch::NoGradGuard g;
  auto mask = lengths_mask(L, {L, L});
  auto x = random_input(2, L, D, 3);
  auto base = m.forward(x, mask);
  for (int64_t t : {int64_t{1}, L / 2, L - 1}) {
    auto changed = x.clone();
    changed.select(1, t).add_(torch::randn({2, D}) * 5);
    auto y = m.forward(changed, mask);
    const double diff = max_abs_diff(y.narrow(1, 0, t), base.narrow(1, 0, t));
    if (diff > tol)
      return ::testing::AssertionFailure() << "changing position " << t << " moved earlier outputs by " << diff;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace lra::test
