// gated_conv — a gated depthwise-convolution token mixer: the example of a
// plugin built out of tree against the installed lrahost SDK.
//
// Every position mixes its neighbours within a short window, channel by
// channel (a depthwise convolution over the sequence), and a sigmoid gate
// computed from the position itself decides how much of that passes — the
// gated linear unit of Dauphin et al. 2017, "Language Modeling with Gated
// Convolutional Networks", with a depthwise kernel:
//
//   v, g = split(x W_in)                 x [B, L, d_model] -> 2 x [B, L, qkv_dim]
//   y    = conv_k(v * mask) * sigmoid(g) per-channel kernel of kernel_size taps
//   out  = y W_out                       -> [B, L, d_model]
//
// Time O(L * kernel_size * qkv_dim), memory O(L * qkv_dim). With `dilated`,
// block i spaces its taps 2^i apart, so stacked blocks see exponentially
// further (as in WaveNet).
//
// Padding: padded positions are zeroed before the convolution, so a real
// token's output depends neither on what the padding holds nor on how much of
// it there is. Causal mode shifts the window to the left (LRA_CAP_CAUSAL).
//
// Parameters: 3 * d_model * qkv_dim + qkv_dim * (kernel_size + 1), fewer than
// softmax attention's 4 * d_model * qkv_dim while kernel_size < d_model, so
// the whole model stays within the task's parameter budget.
#include <algorithm>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <lra/attention.h>  // lra::ops::xavier_uniform
#include <lra/mixer.h>

namespace {

class GatedConv final : public lra::Mixer {
 public:
  GatedConv(const lra::MixerSpec& spec, int64_t kernel_size, bool dilated)
      : width_(spec.qkv_dim),
        proj_in_(register_module("proj_in", torch::nn::Linear(torch::nn::LinearOptions(spec.d_model, 2 * spec.qkv_dim).bias(false)))),
        proj_out_(register_module("proj_out", torch::nn::Linear(torch::nn::LinearOptions(spec.qkv_dim, spec.d_model).bias(false)))) {
    // Taps 2^layer apart, but never so far apart that the window outgrows the sequence.
    int64_t dilation = 1;
    if (dilated && kernel_size > 1) {
      const int64_t widest = std::max<int64_t>(1, (spec.max_len - 1) / (kernel_size - 1));
      for (int64_t i = 0; i < spec.layer_index && dilation * 2 <= widest; ++i) dilation *= 2;
    }
    const int64_t reach = (kernel_size - 1) * dilation;  // positions the window spans besides the centre
    pad_left_ = spec.causal ? reach : reach / 2;
    pad_right_ = reach - pad_left_;
    // groups = channels: one kernel per channel (depthwise). Every initialisation
    // draws from LibTorch's global generator, which the host seeds.
    conv_ = register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(width_, width_, kernel_size)
                                                          .groups(width_)
                                                          .dilation(dilation)));
    lra::ops::xavier_uniform(proj_in_->weight);
    lra::ops::xavier_uniform(proj_out_->weight);
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    auto value_gate = proj_in_->forward(x).split(width_, /*dim=*/-1);
    auto value = value_gate[0];
    // A real token must never read padding: zero it before the window slides over it.
    if (mask.defined()) value = value * mask.unsqueeze(-1).to(value.scalar_type());
    // [B, L, C] -> [B, C, L], padded so the output keeps length L (on the left only when causal).
    auto seq = at::constant_pad_nd(value.transpose(1, 2), {pad_left_, pad_right_});
    auto mixed = conv_->forward(seq).transpose(1, 2);
    return proj_out_->forward(mixed * at::sigmoid(value_gate[1]));
  }

 private:
  int64_t width_;
  int64_t pad_left_ = 0, pad_right_ = 0;
  torch::nn::Linear proj_in_, proj_out_;
  torch::nn::Conv1d conv_{nullptr};
};

// Options are typed by their defaults; the host fills in defaults, applies
// `--set mixer.NAME=VALUE` and records the values in result.json.
std::vector<lra::OptionSpec> options() {
  return {{"kernel_size", int64_t{15}, "taps of the per-channel convolution over the sequence"},
          {"dilated", true, "block i spaces its taps 2^i positions apart"}};
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opt) {
  const int64_t kernel_size = opt.get_int("kernel_size");
  if (kernel_size < 1 || kernel_size > spec.max_len)
    throw lra::Error(lra::ErrorKind::rules, "gated_conv: kernel_size must be between 1 and the sequence length " +
                                                std::to_string(spec.max_len) + ", got " + std::to_string(kernel_size) +
                                                "; set e.g. --set mixer.kernel_size=15");
  return std::make_shared<GatedConv>(spec, kernel_size, opt.get_bool("dilated"));
}

}  // namespace

LRA_MIXER_PLUGIN("gated_conv", "1.0.0",
                 "Gated depthwise-convolution mixer (GLU gating, Dauphin et al. 2017): the SDK's out-of-tree example",
                 LRA_CAP_PADDING_MASK | LRA_CAP_CAUSAL, options, create)
