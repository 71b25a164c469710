#include "model/causal_lm.h"

#include <torch/nn/init.h>

#include "lra/status.h"
#include "model/mixer_call.h"

namespace lra::host {

namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
  torch::nn::Linear l(torch::nn::LinearOptions(in, out).bias(false));
  // Llama's initializer_range: every linear weight ~ N(0, 0.02^2).
  torch::NoGradGuard g;
  torch::nn::init::normal_(l->weight, 0.0, 0.02);
  return l;
}

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return (y * weight).to(x.scalar_type());
}

LlamaBlockImpl::LlamaBlockImpl(const CausalLMSpec& s, std::shared_ptr<lra::Mixer> mx) : mixer(std::move(mx)) {
  register_module("mixer", mixer);
  mix_norm = register_module("mix_norm", RMSNorm(s.model.d_model, s.norm_eps));
  ffn_norm = register_module("ffn_norm", RMSNorm(s.model.d_model, s.norm_eps));
  gate = register_module("gate", linear(s.model.d_model, s.model.ffn_dim));
  up = register_module("up", linear(s.model.d_model, s.model.ffn_dim));
  down = register_module("down", linear(s.model.ffn_dim, s.model.d_model));
  dropout_ = s.model.dropout;
}

torch::Tensor LlamaBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  auto h = x + drop(call_mixer(*mixer, mix_norm(x), mask));
  auto f = ffn_norm(h);
  return h + drop(down(torch::silu(gate(f)) * up(f)));
}

CausalLMImpl::CausalLMImpl(const CausalLMSpec& spec, const MixerFactory& make_mixer) : spec_(spec) {
  const auto& m = spec.model;
  embed = register_module("embed", torch::nn::Embedding(spec.vocab_size, m.d_model));
  {
    torch::NoGradGuard g;
    torch::nn::init::normal_(embed->weight, 0.0, 0.02);
  }
  if (spec.positions == "sinusoidal") {
    pos_ = register_buffer("pos", sinusoidal_positions(m.max_len, m.d_model));
  } else if (spec.positions != "rotary" && spec.positions != "none") {
    throw Error(ErrorKind::internal, "causal LM positions '" + spec.positions + "' (expected rotary, none, sinusoidal)");
  }
  dropout_ = m.dropout;
  for (int64_t i = 0; i < m.layers; ++i) {
    lra::MixerSpec ms = mixer_spec(m, m.max_len, i, spec.seed);
    ms.causal = true;
    ms.rotary_base = spec.positions == "rotary" ? spec.rotary_base : 0.0;
    auto mixer = make_mixer(ms);
    if (!mixer) throw Error(ErrorKind::plugin, "the mixer factory returned no module for layer " + std::to_string(i));
    blocks_.push_back(register_module("block" + std::to_string(i), LlamaBlock(spec, mixer)));
  }
  final_norm = register_module("final_norm", RMSNorm(m.d_model, spec.norm_eps));
  lm_head = register_module("lm_head", linear(m.d_model, spec.vocab_size));
}

torch::Tensor CausalLMImpl::forward(const torch::Tensor& ids) {
  TORCH_CHECK(ids.dim() == 2, "CausalLM expects ids [B, T], got ", ids.sizes());
  // Causal LM inputs are never padded: no mask (lra/mixer.h), which also lets
  // fused attention kernels take their causal fast path.
  const torch::Tensor mask;
  auto x = embed(ids);
  if (pos_.defined()) {
    // The curve measures beyond the training length: sinusoids extend to any length.
    const int64_t T = ids.size(1);
    const auto pos = T <= pos_.size(0) ? pos_.narrow(0, 0, T) : sinusoidal_positions(T, pos_.size(1)).to(pos_.device());
    x = x + pos.to(x.dtype());
  }
  x = drop(x);
  for (auto& b : blocks_) x = b(x, mask);
  return lm_head(final_norm(x));
}

int64_t CausalLMImpl::mixer_parameters() const {
  int64_t n = 0;
  for (const auto& b : blocks_) n += count_parameters(*b->mixer);
  return n;
}

}  // namespace lra::host
