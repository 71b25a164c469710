// validate / validate_impl: the semantic checks of a manifest, section by
// section. The first failing check is reported, so their order is part of
// the messages' contract.
#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "manifest/manifest_fields.h"
#include "manifest/lr_factors.h"
#include "reference/reference_mixers.h"

namespace lra::host {
namespace {

using namespace manifest_detail;

// The checks' vocabulary: each throws ErrorKind::rules "<where>: <key> = <value>: <why>".
struct Checker {
  const Ctx& ctx;

  [[noreturn]] void bad(const std::string& dotted, const std::string& value, const std::string& why) const {
    fail(ErrorKind::rules, ctx.at_key(dotted) + ": " + dotted + " = " + value + ": " + why);
  }
  void positive(const std::string& dotted, int64_t v) const {
    if (v <= 0) bad(dotted, std::to_string(v), "expected a positive integer");
  }
  // Sizes that decide allocations (position tables, activations, batches) are
  // bounded before anything is built: `max_len = 2e9` is refused here, not a
  // bad_alloc later. The bounds are far above any LRA or forgetting protocol
  // (Path-X: 16,384 tokens; widths <= 1,024; batches <= 512).
  void at_most(const std::string& dotted, int64_t v, int64_t limit) const {
    if (v > limit)
      bad(dotted, std::to_string(v),
          "expected at most " + std::to_string(limit) + " (a size beyond what lrahost allocates for a model)");
  }
  // Numbers whose size is no setting, only an overflow (manifest.h's kMax*).
  void number_at_most(const std::string& dotted, double v, double limit, const std::string& range) const {
    if (v > limit) bad(dotted, fmt_double(v), "expected a number in " + range + "; a larger value only overflows the training");
  }
  void steps_at_most(const std::string& dotted, int64_t v) const {
    if (v > kMaxTrainSteps)
      bad(dotted, std::to_string(v), "expected at most " + std::to_string(kMaxTrainSteps) + " steps (2^30)");
  }
  void finite(const std::string& dotted, double v) const {
    if (!std::isfinite(v)) bad(dotted, fmt_double(v), "expected a finite number");
  }
  void unit_interval(const std::string& dotted, double v) const {
    finite(dotted, v);
    if (v < 0.0 || v >= 1.0) bad(dotted, fmt_double(v), "expected a number in [0, 1)");
  }
  void one_of(const std::string& dotted, const std::string& v, const std::vector<std::string>& allowed) const {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      bad(dotted, quote(v), "expected one of " + text::join(allowed));
  }
};

void check_top_level(const Manifest& m, const Checker& c) {
  if (m.schema != kManifestSchema)
    c.bad("schema", quote(m.schema),
          std::string("unsupported manifest schema; this host reads \"") + kManifestSchema + "\"");
  if (m.name.empty()) c.bad("name", quote(m.name), "expected a non-empty string");
  if (m.task.empty() || !std::all_of(m.task.begin(), m.task.end(), is_name_char))
    c.bad("task", quote(m.task), "expected a task name (letters, digits, '_' or '-'), e.g. \"listops\"");
}

void check_model_sizes(const ModelConfig& md, const Checker& c) {
  c.positive("model.layers", md.layers);
  c.positive("model.d_model", md.d_model);
  c.positive("model.heads", md.heads);
  if (md.qkv_dim < 0) c.bad("model.qkv_dim", std::to_string(md.qkv_dim), "expected an integer >= 0 (0 = model.d_model)");
  if (md.ffn_dim < 0 || (md.ffn_dim == 0 && md.pooling != "none"))
    c.bad("model.ffn_dim", std::to_string(md.ffn_dim),
          md.ffn_dim < 0 ? "expected an integer >= 0"
                         : "the classifier's head is ffn_dim wide: expected an integer > 0 (0, no feed-forward, is for "
                           "sequence tasks, pooling = \"none\")");
  c.positive("model.max_len", md.max_len);
  c.at_most("model.layers", md.layers, kMaxModelLayers);
  c.at_most("model.d_model", md.d_model, kMaxModelWidth);
  c.at_most("model.heads", md.heads, kMaxModelWidth);
  c.at_most("model.qkv_dim", md.qkv_dim, kMaxModelWidth);
  c.at_most("model.ffn_dim", md.ffn_dim, kMaxModelWidth);
  c.at_most("model.max_len", md.max_len, kMaxSequenceLength);
  if (md.d_model % md.heads != 0)
    c.bad("model.d_model", std::to_string(md.d_model),
          "must be divisible by model.heads = " + std::to_string(md.heads));
  if (qkv_width(md) % md.heads != 0)
    c.bad("model.qkv_dim", std::to_string(md.qkv_dim),
          (md.qkv_dim == 0 ? "(= model.d_model) " : "") + std::string("must be divisible by model.heads = ") +
              std::to_string(md.heads));
  c.unit_interval("model.dropout", md.dropout);
  c.unit_interval("model.attention_dropout", md.attention_dropout);
}

// The causal LM of the forgetting curve has no pooling and gets its
// positions from the mixers (rotary); the LRA classifier needs both.
void check_model_kind(const ModelConfig& md, bool lm, const Checker& c) {
  c.one_of("model.pooling", md.pooling, {"cls", "mean", "mean_padded", "first", "none"});
  c.one_of("model.positions", md.positions, {"sinusoidal", "learned", "rotary", "none"});
  c.one_of("model.padding_mask", md.padding_mask, {"length", "nonzero_tokens"});
  if (lm && md.pooling != "none")
    c.bad("model.pooling", quote(md.pooling), "task \"forgetting\" trains a causal language model: expected \"none\"");
  if (lm && md.positions != "rotary")
    c.bad("model.positions", quote(md.positions),
          "task \"forgetting\" gives positions through the mixers: expected \"rotary\"");
  if (lm && md.padding_mask != "length")
    c.bad("model.padding_mask", quote(md.padding_mask), "task \"forgetting\" has no padding: expected \"length\"");
  if (!md.positions_without_rotary.empty()) {
    if (!lm)
      c.bad("model.positions_without_rotary", quote(md.positions_without_rotary),
            "only task \"forgetting\" (a causal LM) has this key; the classifier's positions are model.positions");
    c.one_of("model.positions_without_rotary", md.positions_without_rotary, {"none", "sinusoidal"});
  }
  // pooling = "none" outside task "forgetting": a sequence task's model, a
  // head at every position (whether the task is one is known once its data
  // are loaded: runs/sequence_model.h).
  if (md.positions == "none" && (lm || md.pooling != "none"))
    c.bad("model.positions", "\"none\"",
          lm ? "task \"forgetting\" gives positions through the mixers: expected \"rotary\""
             : "only a sequence task's causal model (pooling = \"none\") may have no positions; give a classifier "
               "sinusoidal, learned or rotary ones");
  if (lm && md.ffn_dim == 0) c.bad("model.ffn_dim", "0", "task \"forgetting\" has a SwiGLU feed-forward: expected > 0");
  if (md.short_conv != 0) {
    if (lm || md.pooling != "none")
      c.bad("model.short_conv", std::to_string(md.short_conv),
            "only a sequence task's model (pooling = \"none\", not task \"forgetting\") has the host's short convolution");
    else if (md.short_conv < 1 || md.short_conv > kMaxShortConv)
      c.bad("model.short_conv", std::to_string(md.short_conv),
            "expected a kernel size in [1, " + std::to_string(kMaxShortConv) + "] (0 or absent: none)");
    else if (md.layers < 2)
      c.bad("model.short_conv", std::to_string(md.short_conv),
            "the convolution fills every other block: model.layers must be at least 2, got " +
                std::to_string(md.layers));
  }
  // The classifier may take rotary positions too (an open choice: every released LRA manifest
  // has sinusoidal or learned ones); the mixers must declare LRA_CAP_ROTARY (checked at run time).
  if (md.positions == "rotary" && (qkv_width(md) / md.heads) % 2 != 0)
    c.bad("model.qkv_dim", std::to_string(md.qkv_dim), "rotary positions need an even width per head (qkv_dim / heads)");
}

// train.schedule with the warmup, cycle and decay lengths its factors use
// (train.precision is checked among them: the checks keep their historical order).
void check_schedule(const TrainConfig& t, const Checker& c, const std::string& S) {
  std::string unknown;
  auto factors = parse_lr_factors(t.schedule, &unknown);
  if (!factors) {
    c.bad(S + ".schedule", quote(t.schedule),
          (unknown.empty() ? std::string("empty factor name")
                           : "unknown factor '" + unknown + "'") +
              " (factors are joined by '*'; known factors: " + text::join(lr_factor_names()) + ")");
  }
  if (t.warmup < 0) c.bad(S + ".warmup", std::to_string(t.warmup), "expected an integer >= 0");
  c.steps_at_most(S + ".warmup", t.warmup);
  if (t.warmup == 0) {
    for (LrFactor f : *factors) {
      if (factor_needs_warmup(f))
        c.bad(S + ".warmup", "0",
              "must be positive because train.schedule uses " +
                  lr_factor_names()[static_cast<size_t>(f)] + " (it divides by the warmup)");
    }
  }
  c.positive(S + ".steps_per_cycle", t.steps_per_cycle);
  c.steps_at_most(S + ".steps_per_cycle", t.steps_per_cycle);
  c.one_of(S + ".precision", t.precision, {"auto", "float32"});
  if (t.decay_steps < 0) c.bad(S + ".decay_steps", std::to_string(t.decay_steps), "expected an integer >= 0");
  c.steps_at_most(S + ".decay_steps", t.decay_steps);
  if (std::find(factors->begin(), factors->end(), LrFactor::wsd) != factors->end()) {
    if (t.decay_steps <= 0)
      c.bad(S + ".decay_steps", std::to_string(t.decay_steps),
            "must be positive because train.schedule uses wsd (the length of its decay phase)");
    else if (t.warmup + t.decay_steps > t.steps)
      c.bad(S + ".decay_steps", std::to_string(t.decay_steps),
            "warmup + decay_steps must not exceed train.steps = " + std::to_string(t.steps) +
                " (overrides apply in order: to lengthen a run, set train.steps first)");
  }
}

void check_optimizer(const TrainConfig& t, const Checker& c, const std::string& S) {
  c.finite(S + ".weight_decay", t.weight_decay);
  if (t.weight_decay < 0.0)
    c.bad(S + ".weight_decay", fmt_double(t.weight_decay), "expected a number >= 0");
  c.number_at_most(S + ".weight_decay", t.weight_decay, kMaxWeightDecay, "[0, 10]");
  for (double b : {t.beta1, t.beta2}) {
    if (!std::isfinite(b) || b < 0.0 || b >= 1.0)
      c.bad(S + ".betas", "[" + fmt_double(t.beta1) + ", " + fmt_double(t.beta2) + "]",
            "expected two numbers [beta1, beta2], each in [0, 1)");
  }
  c.finite(S + ".eps", t.eps);
  if (t.eps <= 0.0) c.bad(S + ".eps", fmt_double(t.eps), "expected a positive number");
  c.number_at_most(S + ".eps", t.eps, kMaxAdamEps, "(0, 1]");
  c.finite(S + ".grad_clip", t.grad_clip);
  if (t.grad_clip < 0.0)
    c.bad(S + ".grad_clip", fmt_double(t.grad_clip), "expected a number >= 0 (0 turns clipping off)");
  c.number_at_most(S + ".grad_clip", t.grad_clip, kMaxGradClip, "[0, 1e6] (0 turns clipping off)");
}

// S: the section, "train" or "pretrain" (the same keys, named in messages).
void check_train(const TrainConfig& t, const Checker& c, const std::string& S = "train") {
  c.positive(S + ".steps", t.steps);
  c.steps_at_most(S + ".steps", t.steps);
  c.positive(S + ".batch_size", t.batch_size);
  c.finite(S + ".lr", t.lr);
  if (t.lr <= 0.0) c.bad(S + ".lr", fmt_double(t.lr), "expected a positive number");
  c.number_at_most(S + ".lr", t.lr, kMaxLearningRate, "(0, 10]");
  check_schedule(t, c, S);
  check_optimizer(t, c, S);
  c.positive(S + ".eval_every", t.eval_every);
  c.steps_at_most(S + ".eval_every", t.eval_every);
  c.positive(S + ".checkpoint_every", t.checkpoint_every);
  c.steps_at_most(S + ".checkpoint_every", t.checkpoint_every);
  if (t.seed < 0) c.bad(S + ".seed", std::to_string(t.seed), "expected an integer >= 0");
  c.positive(S + ".eval_batch_size", t.eval_batch_size);
  c.at_most(S + ".batch_size", t.batch_size, kMaxBatchSize);
  c.at_most(S + ".eval_batch_size", t.eval_batch_size, kMaxBatchSize);
}

// [pretrain]: the objective's ratio, then its phase's training keys.
void check_pretrain(const Manifest& m, const Checker& c) {
  if (!m.pretrain.present) return;
  if (m.task == kForgettingTask)
    c.bad("pretrain.steps", std::to_string(m.pretrain.train.steps),
          "task \"forgetting\" trains a language model from scratch; it has no [pretrain] section");
  c.finite("pretrain.mask_ratio", m.pretrain.mask_ratio);
  if (m.pretrain.mask_ratio <= 0.0 || m.pretrain.mask_ratio >= 1.0)
    c.bad("pretrain.mask_ratio", fmt_double(m.pretrain.mask_ratio), "expected a number in (0, 1)");
  check_train(pretraining_train_config(m), c, "pretrain");
}

void check_rules(const RulesConfig& r, const Checker& c) {
  c.finite("rules.param_budget_ratio", r.param_budget_ratio);
  if (r.param_budget_ratio < 1.0)
    c.bad("rules.param_budget_ratio", fmt_double(r.param_budget_ratio),
          "expected a number >= 1.0 (the reference Transformer itself must fit the budget)");
  c.number_at_most("rules.param_budget_ratio", r.param_budget_ratio, kMaxParamBudgetRatio, "[1, 1000]");
  std::vector<int64_t> seen;
  for (int64_t seed : r.seeds) {
    if (seed < 0) c.bad("rules.seeds", std::to_string(seed), "expected seeds >= 0");
    if (std::find(seen.begin(), seen.end(), seed) != seen.end())
      c.bad("rules.seeds", std::to_string(seed), "each seed may appear once");
    seen.push_back(seed);
  }
  if (!r.reference_settings.empty()) {
    const auto tables = settings_table_names();
    if (std::find(tables.begin(), tables.end(), r.reference_settings) == tables.end())
      c.bad("rules.reference_settings", quote(r.reference_settings),
            "expected the name of a reference settings table this host compiles in: one of " + text::join(tables) +
                " (docs/releases.md)");
  }
}

}  // namespace

namespace manifest_detail {

void validate_impl(const Manifest& m, const Ctx& ctx) {
  const Checker c{ctx};
  check_top_level(m, c);
  check_model_sizes(m.model, c);
  check_model_kind(m.model, m.task == kForgettingTask, c);
  check_train(m.train, c);
  check_rules(m.rules, c);
  check_pretrain(m, c);
}

}  // namespace manifest_detail

void validate(const Manifest& m) {
  manifest_detail::Ctx ctx;
  ctx.label = m.source.empty() ? std::string("manifest") : m.source;
  if (!m.overrides.empty()) ctx.label += " (with --set " + text::join(m.overrides, ", ") + ")";
  manifest_detail::validate_impl(m, ctx);
}

}  // namespace lra::host
