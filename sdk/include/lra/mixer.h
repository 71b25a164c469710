// lra/mixer.h — the mixer contract: what a plugin author implements.
//
// The host owns the whole backbone (embeddings, positions, norms, feed-forward
// layers, pooling, head, optimiser, data). A mixer plugin provides only the
// token-mixing layer of each block: a LibTorch module mapping
//   x [B, L, D] (float) and mask [B, L] (bool, true = real token)  ->  [B, L, D].
//
// Lifetime: the host never unloads a plugin library, so modules created here may
// hold code (vtables, deleters) from the plugin for the whole process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "lra/options.h"
#include "lra/plugin.h"
#include "lra/status.h"

namespace lra {
inline namespace v1 {

// Fixed by the task manifest; a plugin must not change the model's width.
struct MixerSpec {
  int64_t d_model = 0;       // width of x and of the output
  int64_t heads = 1;         // number of heads the manifest asks for
  int64_t qkv_dim = 0;       // total width of queries/keys/values over all heads
  int64_t max_len = 0;       // longest sequence the mixer will see (CLS included)
  bool causal = false;       // position i may only read positions <= i
  double attention_dropout = 0.0;
  int64_t layer_index = 0;   // 0-based block index (e.g. to vary patterns per layer)
  uint64_t seed = 0;         // for plugin-internal fixed randomness (e.g. hash rotations)
  // ABI 1.1: > 0 = the backbone adds no positions; rotate queries and keys
  // with lra::ops::rotary_embed(x, rotary_base) (requires LRA_CAP_ROTARY).
  double rotary_base = 0.0;
};

// ABI 1.2: how the host's AdamW treats one of the mixer's parameters, the
// way state-space layers are trained by their authors (S4's `_optim` with
// weight decay 0 and lr <= 1e-3 on A and dt; Mamba's `_no_weight_decay` on
// A_log, dt_bias and D). A hint may only lower: weight decay to 0, the
// learning rate by a factor or a cap on its peak. Allowed in the closed
// division and recorded in result.json (docs/rules.md).
struct ParamHint {
  std::string name;              // a key of this mixer's named_parameters()
  bool no_weight_decay = false;  // no decoupled weight decay on it
  double lr_scale = 1.0;         // in (0, 1]: the schedule's learning rate times this
  double lr_max = 0.0;           // > 0: the schedule scaled so that its peak is at most this
};

class Mixer : public torch::nn::Module {
 public:
  // x: [B, L, D]; mask: [B, L] bool (true = real token), or an undefined
  // tensor when no position is padding (the causal LM of the forgetting
  // curve never pads). Returns [B, L, D].
  virtual torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) = 0;

  // LRA_CAP_ATTENTION_PROBS: when recording is on, the next forward keeps its
  // attention probabilities [B, H, L, L] for last_attention().
  virtual void set_record_attention(bool on) { record_attention_ = on; }
  virtual torch::Tensor last_attention() const { return last_attention_; }

  // ABI 1.2 (asked only of plugins built for SDK 1.2 or later): parameters
  // the optimizer treats differently; none by default.
  virtual std::vector<ParamHint> optimizer_hints() const { return {}; }

  // ABI 1.3 (asked only of plugins built for SDK 1.3 or later): decoding one
  // token at a time, for `lrahost bench --decode`. A mixer created with
  // spec.causal that returns true from decodes() promises: starting from
  // decode_start(B, options) and calling decode_step once per position
  // 0, 1, 2, ..., the output of step t equals row t of forward(x, {}) on the
  // whole sequence (no padding), to rounding. x_t is [B, D] and so is the
  // result. The state is whatever the mixer keeps per sequence (a KV cache, a
  // recurrent state); decode_step may replace or grow its tensors, and the
  // host counts their bytes as the memory per sequence. `position` is t (for
  // rotary positions: lra::ops::rotary_embed's offset). Runs under no-grad in
  // evaluation mode. A mixer that does not decode is measured by recomputing
  // its causal forward over the whole context for every token.
  virtual bool decodes() const { return false; }
  virtual std::vector<torch::Tensor> decode_start(int64_t /*batch*/, const torch::TensorOptions& /*options*/) {
    throw Error(ErrorKind::plugin, "this mixer does not decode token by token (decodes() is false)");
  }
  virtual torch::Tensor decode_step(const torch::Tensor& /*x_t*/, std::vector<torch::Tensor>& /*state*/,
                                    int64_t /*position*/) {
    throw Error(ErrorKind::plugin, "this mixer does not decode token by token (decodes() is false)");
  }

  // ABI 1.6 (asked only of plugins built for SDK 1.6 or later, and only of a
  // mixer that decodes): a whole prompt x [B, L, D] in one call, from a
  // `state` fresh from decode_start. It leaves `state` as decode_step at
  // positions 0 .. L-1 would (decoding goes on at position L) and returns the
  // prompt's outputs [B, L, D] (rows of forward(x, {}), to rounding). The
  // default is those L steps; a mixer with a parallel form (a KV cache's keys
  // in one matmul, a linear recurrence's final state as one sum) overrides it
  // and says so with prefills_in_parallel(). The host checks an override
  // against the steps before it trusts it (plugins/decode_check.h).
  virtual torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) {
    std::vector<torch::Tensor> rows;
    rows.reserve(static_cast<size_t>(x.size(1)));
    for (int64_t t = 0; t < x.size(1); ++t) rows.push_back(decode_step(x.select(1, t), state, t));
    return rows.empty() ? x.new_zeros(x.sizes()) : at::stack(rows, 1);
  }
  virtual bool prefills_in_parallel() const { return false; }

 protected:
  bool record_attention_ = false;
  torch::Tensor last_attention_;
};

// The interface the host calls; LRA_MIXER_PLUGIN implements it for you.
class MixerPlugin {
 public:
  virtual ~MixerPlugin() = default;
  virtual Status options(std::vector<OptionSpec>* out) const noexcept = 0;
  // `options` holds every declared option (defaults filled in by the host).
  virtual Status create(const MixerSpec& spec, const Params& options,
                        std::shared_ptr<Mixer>* out) const noexcept = 0;
};

namespace detail {
using MixerOptionsFn = std::vector<OptionSpec> (*)();
using MixerCreateFn = std::shared_ptr<Mixer> (*)(const MixerSpec&, const ParamReader&);

class MixerPluginImpl final : public MixerPlugin {
 public:
  MixerPluginImpl(MixerOptionsFn o, MixerCreateFn c, const char* name, uint32_t caps)
      : o_(o), c_(c), name_(name), caps_(caps) {}
  Status options(std::vector<OptionSpec>* out) const noexcept override {
    return guarded([&] { *out = o_(); });
  }
  Status create(const MixerSpec& spec, const Params& options,
                std::shared_ptr<Mixer>* out) const noexcept override {
    return guarded([&] {
      if (spec.causal && !(caps_ & LRA_CAP_CAUSAL))
        throw Error(ErrorKind::plugin, std::string("mixer '") + name_ +
                                           "' does not support causal mode (it does not declare LRA_CAP_CAUSAL)");
      if (spec.rotary_base > 0 && !(caps_ & LRA_CAP_ROTARY))
        throw Error(ErrorKind::plugin, std::string("mixer '") + name_ +
                                           "' does not support rotary positions (it does not declare LRA_CAP_ROTARY)");
      ParamReader reader(options, std::string("mixer '") + name_ + "' options");
      *out = c_(spec, reader);
      if (!*out) throw Error(ErrorKind::plugin, std::string("mixer '") + name_ + "' returned no module");
    });
  }

 private:
  MixerOptionsFn o_;
  MixerCreateFn c_;
  const char* name_;
  uint32_t caps_;
};
}  // namespace detail

}  // namespace v1
}  // namespace lra

// Declares a mixer plugin. OPTIONS_FN: std::vector<lra::OptionSpec>();
// CREATE_FN: std::shared_ptr<lra::Mixer>(const lra::MixerSpec&, const lra::ParamReader&).
#define LRA_MIXER_PLUGIN(NAME, VERSION, DESCRIPTION, CAPS, OPTIONS_FN, CREATE_FN) \
  LRA_DETAIL_INFO(LRA_KIND_MIXER, CAPS, NAME, VERSION, DESCRIPTION)               \
  LRA_DETAIL_ENTRY(::lra::MixerPlugin, ::lra::detail::MixerPluginImpl(OPTIONS_FN, CREATE_FN, NAME, CAPS))
