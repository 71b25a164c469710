#include "plugins/gradient_check.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "lra/status.h"

namespace lra::host {
namespace {

// "name[i, j, k]" for flat index `flat` of a tensor of `sizes`.
std::string element_name(const std::string& name, at::IntArrayRef sizes, int64_t flat) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  std::string out = name + "[";
  for (size_t i = 0; i < idx.size(); ++i) out += (i ? ", " : "") + std::to_string(idx[i]);
  return out + "]";
}

struct Setup {
  std::shared_ptr<lra::Mixer> mixer;
  torch::Tensor x, mask, probe;  // float64
};

// The scalar the gradients are of: a fixed random projection of the real positions' outputs.
torch::Tensor objective(lra::Mixer& m, const torch::Tensor& x, const Setup& s) {
  return (m.forward(x, s.mask) * s.probe).sum();
}

}  // namespace

std::vector<GradientCheck> check_gradients(const MixerMaker& make, const lra::MixerSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  Setup s;
  s.mixer = make(spec);
  if (!s.mixer) throw Error(ErrorKind::plugin, "the plugin built no mixer");
  s.mixer->eval();
  s.mixer->to(torch::kFloat64);
  const int64_t B = 2, L = spec.max_len, D = spec.d_model;
  s.x = torch::randn({B, L, D}, torch::kFloat64);
  s.mask = torch::ones({B, L}, torch::kBool);
  s.mask[1].narrow(0, L / 2, L - L / 2).fill_(false);
  // Padded positions' outputs are not part of the objective: they are anyone's to define.
  s.probe = torch::randn({B, L, D}, torch::kFloat64) * s.mask.to(torch::kFloat64).unsqueeze(-1);

  std::vector<GradientCheck> out;
  // 1. float64 analytic gradients against central differences on sampled elements.
  {
    GradientCheck c{"finite differences (float64)", true, 0, 1e-4, "", 0};
    s.mixer->zero_grad();
    auto xg = s.x.clone().requires_grad_(true);
    objective(*s.mixer, xg, s).backward();
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"x", xg}};
    std::vector<torch::Tensor> grads = {xg.grad().clone()};
    for (const auto& p : s.mixer->named_parameters())
      if (p.value().grad().defined()) {
        tensors.emplace_back(p.key(), p.value());
        grads.push_back(p.value().grad().clone());
      }
    torch::NoGradGuard no_grad;
    const double h = 1e-6;
    for (size_t t = 0; t < tensors.size(); ++t) {
      auto& [name, tensor] = tensors[t];
      auto flat = tensor.view({-1});
      const auto gflat = grads[t].view({-1});
      const int64_t n = flat.numel(), samples = std::min<int64_t>(n, t == 0 ? 24 : 8);
      const auto picks = torch::randperm(n, torch::kLong).narrow(0, 0, samples);
      for (int64_t k = 0; k < samples; ++k) {
        const int64_t i = picks[k].item<int64_t>();
        const double v = flat[i].item<double>();
        auto eval_at = [&](double value) {
          flat[i] = value;
          const torch::Tensor input = t == 0 ? tensor : s.x;
          return objective(*s.mixer, input, s).item<double>();
        };
        const double numeric = (eval_at(v + h) - eval_at(v - h)) / (2 * h);
        flat[i] = v;
        const double analytic = gflat[i].item<double>();
        const double err = std::fabs(analytic - numeric) / std::max(1.0, std::fabs(numeric));
        ++c.elements;
        if (!(err <= c.worst) && !std::isnan(c.worst)) {
          c.worst = std::isfinite(err) ? err : NAN;
          c.worst_element = element_name(name, tensor.sizes(), i);
        }
      }
    }
    c.passed = std::isfinite(c.worst) && c.worst <= c.tolerance;
    out.push_back(c);
  }
  // 2. float32 gradients against float64 ones, from the same weights and input.
  {
    GradientCheck c{"float32 against float64", true, 0, 1e-3, "", 0};
    auto grads = [&](torch::ScalarType type) {
      s.mixer->to(type);
      s.mixer->zero_grad();
      auto xi = s.x.to(type).detach().requires_grad_(true);
      (s.mixer->forward(xi, s.mask) * s.probe.to(type)).sum().backward();
      std::vector<std::pair<std::string, torch::Tensor>> g = {{"x", xi.grad().to(torch::kFloat64)}};
      for (const auto& p : s.mixer->named_parameters())
        if (p.value().grad().defined()) g.emplace_back(p.key(), p.value().grad().to(torch::kFloat64).clone());
      return g;
    };
    const auto g64 = grads(torch::kFloat64);
    const auto g32 = grads(torch::kFloat32);
    s.mixer->to(torch::kFloat64);
    for (size_t i = 0; i < g64.size() && i < g32.size(); ++i) {
      // Relative to the gradient's own scale: a tiny gradient's float32 noise is not a fault.
      const double scale = std::max(1.0, g64[i].second.abs().max().item<double>());
      const auto diff = (g32[i].second - g64[i].second).abs().view({-1});
      const int64_t at = diff.argmax().item<int64_t>();
      const double err = diff[at].item<double>() / scale;
      c.elements += diff.numel();
      if (!(err <= c.worst) && !std::isnan(c.worst)) {
        c.worst = std::isfinite(err) ? err : NAN;
        c.worst_element = element_name(g64[i].first, g64[i].second.sizes(), at);
      }
    }
    if (g64.size() != g32.size()) c.worst = NAN, c.worst_element = "the set of parameters with gradients differs";
    c.passed = std::isfinite(c.worst) && c.worst <= c.tolerance;
    out.push_back(c);
  }
  return out;
}

}  // namespace lra::host
