// transformer — full softmax multi-head attention (Vaswani et al., 2017), the
// LRA baseline every other mixer is compared with. Built with the public SDK
// only, exactly as a third-party plugin would be.
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

class SoftmaxAttention final : public lra::Mixer {
 public:
  SoftmaxAttention(const lra::MixerSpec& spec)
      : heads_(spec.heads), causal_(spec.causal), dropout_(spec.attention_dropout), rotary_base_(spec.rotary_base),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    return lra::ops::multi_head_attention(*proj_, x, mask, heads_, causal_, dropout_, is_training(),
                                          record_attention_ ? &last_attention_ : nullptr, rotary_base_);
  }

  // Decoding with a KV cache: memory per sequence grows with the context.
  bool decodes() const override { return causal_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    return lra::ops::kv_cache_start(*proj_, heads_, batch, options);
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t position) override {
    return lra::ops::kv_cache_step(*proj_, x_t, state, heads_, rotary_base_, position);
  }
  // The prompt's keys and values in one projection; its outputs are the causal forward's.
  bool prefills_in_parallel() const override { return true; }
  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    state = lra::ops::kv_cache_prefill(*proj_, x, heads_, rotary_base_);
    return forward(x, {});
  }

 private:
  int64_t heads_;
  bool causal_;
  double dropout_;
  double rotary_base_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() { return {}; }

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader&) {
  return std::make_shared<SoftmaxAttention>(spec);
}

}  // namespace

LRA_MIXER_PLUGIN("transformer", "1.0.0",
                 "Full softmax multi-head attention (Vaswani et al. 2017), the LRA baseline",
                 LRA_CAP_CAUSAL | LRA_CAP_ATTENTION_PROBS | LRA_CAP_PADDING_MASK | LRA_CAP_ROTARY, options, create)
