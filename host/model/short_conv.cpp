#include "model/short_conv.h"

#include <cmath>

#include <torch/nn/functional/conv.h>
#include <torch/nn/modules/linear.h>

namespace lra::host {
namespace {

class GatedShortConv final : public lra::Mixer {
 public:
  GatedShortConv(const lra::MixerSpec& s, int64_t kernel) : kernel_(kernel) {
    // As Zoology initialises it: the convolution keeps PyTorch's Conv1d default
    // (uniform within 1/sqrt(fan_in), fan_in = kernel for a depthwise one), the
    // projection gets the model's Linear init, N(0, 0.02) and a zero bias.
    const double bound = 1.0 / std::sqrt(static_cast<double>(kernel));
    weight_ = register_parameter("conv_weight", torch::empty({s.d_model, 1, kernel}).uniform_(-bound, bound));
    bias_ = register_parameter("conv_bias", torch::empty({s.d_model}).uniform_(-bound, bound));
    projection_ = register_module("projection", torch::nn::Linear(s.d_model, s.d_model));
    torch::NoGradGuard no_grad;
    projection_->weight.normal_(0.0, 0.02);
    projection_->bias.zero_();
  }

  torch::Tensor forward(const torch::Tensor& u, const torch::Tensor& /*mask: causal, padding comes last*/) override {
    namespace F = torch::nn::functional;
    const auto L = u.size(1);
    auto conv = F::conv1d(u.transpose(1, 2), weight_.to(u.dtype()),
                          F::Conv1dFuncOptions().bias(bias_.to(u.dtype())).padding(kernel_ - 1).groups(u.size(2)));
    conv = conv.narrow(2, 0, L).transpose(1, 2);
    return conv * projection_(u) + u;
  }

  bool decodes() const override { return true; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    return {torch::zeros({batch, kernel_ - 1, weight_.size(0)}, options)};
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t) override {
    // The window [u_{t-k+1} .. u_t] against the kernel (conv1d is a correlation: tap j meets u_{t-k+1+j}).
    const auto window = torch::cat({state[0], x_t.unsqueeze(1)}, 1);  // [B, k, D]
    const auto w = weight_.to(x_t.dtype()).squeeze(1).transpose(0, 1);  // [k, D]
    const auto conv = (window * w.unsqueeze(0)).sum(1) + bias_.to(x_t.dtype());
    state[0] = window.narrow(1, 1, kernel_ - 1);
    return conv * projection_(x_t) + x_t;
  }

 private:
  int64_t kernel_;
  torch::Tensor weight_, bias_;
  torch::nn::Linear projection_{nullptr};
};

}  // namespace

std::shared_ptr<lra::Mixer> make_gated_short_conv(const lra::MixerSpec& spec, int64_t kernel) {
  return std::make_shared<GatedShortConv>(spec, kernel);
}

}  // namespace lra::host
