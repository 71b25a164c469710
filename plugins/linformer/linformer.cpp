// linformer — low-rank attention along the length axis (Wang, Li, Khabsa, Fang
// and Ma, 2020, "Linformer: Self-Attention with Linear Complexity").
//
// Keys and values [B, L, qkv] are projected along the length axis by a k x L
// matrix E (the first L columns of a k x max_len table) to [B, k, qkv]; every
// query then attends over those k projected keys, so time and memory are
// O(L·k) instead of O(L²). As in LRA, one E per layer is shared by all heads
// and (by default) by keys and values.
//
// Padding: padded keys and values are zeroed before the projection, so they
// contribute nothing to the k projected keys/values. Since padding sits at the
// end of each row, a row with n real tokens then gives exactly the output of
// the same n tokens fed alone (which use E's first n columns): the padding
// mask is honoured exactly (tests/unit/mixers/test_linformer.cpp checks it).
// mask_keys = false reproduces LRA, which ignores the mask: padding is projected too.
#include <cmath>
#include <string>

#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

struct LinformerOptions {
  int64_t k = 16;
  bool share_kv = true;
  bool learned = true;  // false: E (and F) are fixed random buffers
  bool mask_keys = true;  // false: padded keys and values are projected as well (LRA)
};

// Xavier-uniform bound of LRA's (max_len, k) projection kernel (Flax: fan_in
// = max_len, fan_out = k). Used for the learned and for the fixed projection,
// so the two start from the same distribution.
at::Tensor projection_init(int64_t k, int64_t max_len) {
  const double bound = std::sqrt(6.0 / static_cast<double>(max_len + k));
  torch::NoGradGuard g;
  return at::empty({k, max_len}).uniform_(-bound, bound);
}

class LinformerAttention final : public lra::Mixer {
 public:
  LinformerAttention(const lra::MixerSpec& spec, const LinformerOptions& o)
      : heads_(spec.heads), max_len_(spec.max_len), mask_keys_(o.mask_keys), dropout_(spec.attention_dropout),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {
    e_ = add_projection("E", o);
    f_ = o.share_kv ? e_ : add_projection("F", o);
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& given_mask) override {
    const at::Tensor mask = mask_keys_ ? given_mask : at::Tensor();
    const int64_t L = x.size(1);
    TORCH_CHECK(L <= max_len_, "linformer: sequence length ", L, " exceeds max_len ", max_len_,
                " (the length projection has max_len columns)");
    auto q = lra::ops::split_heads(proj_->q(x), heads_);
    auto k = lra::ops::split_heads(project_length(e_, zero_padding(proj_->k(x), mask)), heads_);
    auto v = lra::ops::split_heads(project_length(f_, zero_padding(proj_->v(x), mask)), heads_);
    // Every projected key is real (padding was removed above): no key mask.
    auto out = lra::ops::softmax_attention(q, k, v, /*key_mask=*/{}, /*causal=*/false, dropout_, is_training());
    return proj_->o(lra::ops::merge_heads(out));
  }

 private:
  at::Tensor add_projection(const std::string& name, const LinformerOptions& o) {
    auto init = projection_init(o.k, max_len_);
    return o.learned ? register_parameter(name, init) : register_buffer(name, init);
  }

  // [B, L, C] with the rows of padded positions set to 0.
  static at::Tensor zero_padding(const at::Tensor& t, const at::Tensor& mask) {
    if (!mask.defined()) return t;
    return t.masked_fill(mask.logical_not().unsqueeze(-1), 0.0);
  }

  // [k, max_len] table, [B, L, C] -> [B, k, C]; shorter inputs use the first L columns.
  static at::Tensor project_length(const at::Tensor& table, const at::Tensor& t) {
    return at::matmul(table.narrow(1, 0, t.size(1)), t);
  }

  int64_t heads_;
  int64_t max_len_;
  bool mask_keys_;
  double dropout_;
  lra::QKVO proj_;
  at::Tensor e_, f_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"k", int64_t{16}, "projected length (LRA: 16); time and memory O(L·k)"},
      {"share_kv", true, "one length projection for keys and values (LRA: true); false adds a second k x max_len matrix"},
      {"projection", std::string("auto"),
       "learned: E is a trainable k x max_len parameter (LRA, k·max_len parameters per layer); "
       "fixed: E is a fixed random buffer (0 parameters; fits every task's budget); "
       "auto: learned when E adds at most 10% to the layer's Q/K/V/O parameters, else fixed"},
      {"mask_keys", true,
       "padded keys and values are zeroed before the projection; false reproduces LRA, which ignores the mask "
       "(it fails the padding_mask conformance check)"},
  };
}

LinformerOptions read_options(const lra::ParamReader& r, const lra::MixerSpec& spec) {
  LinformerOptions o;
  o.k = r.get_int("k");
  o.share_kv = r.get_bool("share_kv");
  o.mask_keys = r.get_bool("mask_keys");
  const std::string projection = r.get_string("projection");
  if (o.k < 1) throw lra::Error(lra::ErrorKind::rules, "linformer: k must be >= 1, got " + std::to_string(o.k));
  if (projection != "learned" && projection != "fixed" && projection != "auto")
    throw lra::Error(lra::ErrorKind::rules,
                     "linformer: projection must be 'auto', 'learned' or 'fixed', got '" + projection + "'");
  // auto: LRA's learned E where it is cheap (ListOps, Text); a fixed E where a
  // learned one would break the 10% parameter rule (Retrieval, Image,
  // Pathfinder, Path-X). Within 10% of the attention parameters per layer is
  // within 10% of the whole model, so auto fits every task's budget.
  const int64_t e_params = o.k * (spec.max_len) * (o.share_kv ? 1 : 2);
  const int64_t qkvo_params = 4 * spec.d_model * spec.qkv_dim;
  o.learned = projection == "learned" || (projection == "auto" && 10 * e_params <= qkvo_params);
  return o;
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& r) {
  return std::make_shared<LinformerAttention>(spec, read_options(r, spec));
}

}  // namespace

// Not causal: every projected key mixes all positions, the future included.
LRA_MIXER_PLUGIN("linformer", "1.1.0",
                 "Linformer (Wang et al. 2020): keys and values projected along the length axis to k rows, O(L·k)",
                 LRA_CAP_PADDING_MASK, options, create)
