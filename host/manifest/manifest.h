// manifest/manifest.h — a task's fixed hyperparameters, read from TOML.
//
// A manifest (schema "lrahost.manifest/v1") has four sections whose key names
// are a contract (docs/rules.md "Tiers", docs/releases.md "What a release is"):
//   [model]  layers d_model heads qkv_dim ffn_dim dropout attention_dropout
//            pooling positions max_len (padding_mask)
//   [train]  steps batch_size lr schedule warmup steps_per_cycle (decay_steps) weight_decay
//            betas eps grad_clip eval_every checkpoint_every seed eval_batch_size
//   [data]   free-form scalars, validated by the task plugin
//   [rules]  param_budget_ratio (seeds) (reference_settings)
//   [pretrain] (optional; a self-pretraining protocol, docs/rules.md
//            "Self-pretraining") objective keys and the training keys of its
//            first phase, see pretrain_fields in manifest_fields.cpp
// plus the top-level strings schema, name, task and (optional) description.
//
// Every problem is reported as lra::Error(ErrorKind::rules, msg) where msg
// names the source, the dotted key, the offending value and what is expected
// (command-line syntax problems in apply_override are ErrorKind::usage).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lra/options.h"
#include "lra/status.h"

namespace lra::host {

inline constexpr const char* kManifestSchema = "lrahost.manifest/v1";
// The host-side task of `lrahost forget` (a causal LM, not a task plugin).
inline constexpr const char* kForgettingTask = "forgetting";

// Upper bounds on the sizes a manifest (or --set) may ask for, checked by
// validate before anything is allocated (exit 4 naming the key). 2^20 tokens is
// 64x Path-X; the widths are 64x LRA's largest.
inline constexpr int64_t kMaxSequenceLength = int64_t{1} << 20;
inline constexpr int64_t kMaxModelWidth = int64_t{1} << 16;
inline constexpr int64_t kMaxShortConv = 64;  // model.short_conv: a short convolution's kernel
inline constexpr int64_t kMaxModelLayers = 1024;
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 16;
// Step counts (train.steps, warmup, decay_steps, steps_per_cycle, eval_every,
// checkpoint_every): 2^30 is 2,000x LRA's longest run; below it their sums
// (warmup + decay_steps) cannot overflow.
inline constexpr int64_t kMaxTrainSteps = int64_t{1} << 30;

// The optimizer's numbers, bounded the same way (exit 4 naming the key and the
// range): a finite but absurd value (train.lr = 1e308) is no setting anyone
// trains with, it only overflows the parameters into a non-finite loss after
// training has started. Every released manifest lies far inside (lr <= 0.05,
// weight_decay <= 0.1, eps >= 1e-9, grad_clip <= 1, budget ratio 1.1).
inline constexpr double kMaxLearningRate = 10.0;        // train.lr in (0, 10]
inline constexpr double kMaxWeightDecay = 10.0;         // train.weight_decay in [0, 10]
inline constexpr double kMaxAdamEps = 1.0;              // train.eps in (0, 1]
inline constexpr double kMaxGradClip = 1.0e6;           // train.grad_clip in [0, 1e6] (0 = off)
inline constexpr double kMaxParamBudgetRatio = 1000.0;  // rules.param_budget_ratio in [1, 1000]

struct ModelConfig {
  int64_t layers = 0, d_model = 0, heads = 0, qkv_dim = 0;
  int64_t ffn_dim = 0;  // 0: no feed-forward in the blocks (sequence tasks only: Zoology's Identity state mixer)
  double dropout = 0.0, attention_dropout = 0.0;
  std::string pooling;    // "cls" (inserted CLS token) | "mean" (over real tokens) | "first" (first token, no CLS)
                          // | "none" (task "forgetting": a causal LM; a sequence task: a head at every position)
  std::string positions;  // "sinusoidal" | "learned" | "rotary" (inside the mixers: task "forgetting", or
                          // a classifier whose mixer declares LRA_CAP_ROTARY; no position table then)
                          // | "none" (a sequence task's causal model: order only from causal mixing)
  int64_t max_len = 0;    // tokens, without the CLS position the host adds for cls pooling
  // Optional key (added in lra-v1.2; absent = "length", what releases before it did):
  //   "length"         real tokens are the example's first `length` positions;
  //   "nonzero_tokens" LRA's encoders: a token is real when its id is > 0, so on
  //                    the image tasks black pixels (id 0) are masked as keys, and
  //                    an inserted CLS copies the first position's mask (quirk Q1).
  std::string padding_mask = "length";
  // Optional key, task "forgetting" only (added in forgetting-v1.2): the
  // positions of the causal LM when its mixer does not declare LRA_CAP_ROTARY.
  // Absent ("") = such mixers are refused, what releases before it did;
  // "none" (no explicit positions: causal mixing orders tokens by itself) or
  // "sinusoidal" (added to the token embeddings, extended to any length, since
  // the curve measures beyond the training length).
  std::string positions_without_rotary;
  // Optional key, sequence tasks only (added for the recall suites; absent = 0):
  // the kernel of the host's gated short convolution (Zoology's BaseConv:
  // y = conv_k(u) * W u + u, depthwise and causal), which then fills the
  // even-numbered blocks while the plugin's mixer fills the odd ones —
  // Zoology's Hybrid [conv, mixer], the same convolution for every mixer.
  int64_t short_conv = 0;
};

// The attention width a mixer is given: model.qkv_dim, or the model's width
// when it is 0 (a protocol whose [grid] sweeps d_model keeps qkv = d_model, as
// Zoology's and MAD's mixers do).
inline int64_t qkv_width(const ModelConfig& m) { return m.qkv_dim > 0 ? m.qkv_dim : m.d_model; }

struct TrainConfig {
  int64_t steps = 0, batch_size = 0;
  double lr = 0.0;         // the schedule's `constant` factor (not the peak with rsqrt_decay)
  std::string schedule;    // "*"-separated factors, see train/lr_schedule.h
  int64_t warmup = 0, steps_per_cycle = 0;
  int64_t decay_steps = 0; // wsd only: length of the final decay phase (optional key, default 0)
  // Optional key: "auto" = bfloat16 autocast on CUDA, float32 on CPU;
  // "float32" forbids autocast (a manifest whose numbers need full precision).
  std::string precision = "auto";
  double weight_decay = 0.0;
  double beta1 = 0.0, beta2 = 0.0, eps = 0.0;  // manifest key: betas = [beta1, beta2]
  double grad_clip = 0.0;  // global L2 norm; 0 = off
  int64_t eval_every = 0, checkpoint_every = 0, seed = 0, eval_batch_size = 0;
};

struct RulesConfig {
  double param_budget_ratio = 0.0;  // max params / reference Transformer params
  // Optional key: the trial seeds of a complete submission (`lrahost suite`
  // runs each; `lrahost verify` checks none is missing). Empty = [train.seed].
  std::vector<int64_t> seeds;
  // Optional key (added in lra-v1.3): the LRA reference settings table the
  // host's built-in mixers run with, by its name relative to manifests/
  // ("reference-mixers/lra-v1.3.toml"). Absent ("") = the table every release
  // before it ran with (reference/reference_mixers.h kTableOfManifestsWithoutKey).
  std::string reference_settings;
};

// The first phase of a self-pretraining protocol (the SPT of Amos, Berant and
// Gupta, ICLR 2024): the encoder trains on the task's training inputs alone
// (labels never read) before the usual fine-tuning under [train]. The
// objective follows the mixer: next-token prediction when it does not read
// ahead (the summary rule's probe), masked-token denoising otherwise.
struct PretrainConfig {
  bool present = false;     // the manifest has a [pretrain] section
  double mask_ratio = 0.0;  // masked denoising: the fraction of each input's real tokens replaced
  // The phase's optimisation, read with the [train] key names; seed and
  // eval_batch_size are not keys of [pretrain] (the trial seed is train.seed;
  // the phase evaluates nothing), see pretraining_train_config.
  TrainConfig train;
};

// One axis of [grid] (docs/manifests.md "Grid"): a numeric [model] or [train]
// key and the values the protocol sweeps. A point on the grid is the
// protocol's own choice, so --set to one of them keeps a run closed; the
// manifest's own value is one of them.
struct GridAxis {
  std::string key;             // dotted: "model.d_model", "train.lr"
  std::vector<double> values;  // distinct, in the file's order
};

// One variant of [settings] (docs/suites.md "Settings"): a protocol's named
// change of its own configuration, e.g. MAD's "vocab_size-32" = {
// data.vocab_size = 32 }. A run whose --set assignments are exactly one
// setting's changes stands on that setting and stays closed.
struct ProtocolSetting {
  std::string name;
  std::vector<std::pair<std::string, nlohmann::json>> changes;  // ("data.vocab_size", 32), in the file's order
};
// What config.setting says for the file's own configuration.
inline constexpr const char* kBaselineSetting = "baseline";

struct Manifest {
  std::string schema, name, task, description;
  ModelConfig model;
  TrainConfig train;
  PretrainConfig pretrain;
  lra::Params data;  // carried as is; the task plugin validates it
  RulesConfig rules;
  std::vector<GridAxis> grid;  // [grid], empty when the protocol sweeps nothing
  std::vector<ProtocolSetting> settings;  // [settings], empty when the protocol has one configuration
  std::string setting;  // the setting this configuration stands on; "" = the file's own (the baseline)
  std::string source;  // file path, or "builtin:lra-v1/listops.toml"
  std::string text;    // the exact bytes parsed (what the manifest hash covers)
  std::vector<std::string> overrides;  // "key=value" assignments applied by apply_override, in order
};

// Parses and validates a manifest. `source` names it in every message.
Manifest parse_manifest(std::string_view text, const std::string& source);

// Applies one command-line assignment "section.key=value" (e.g.
// "train.steps=100", "train.betas=[0.9,0.99]", "model.pooling=mean"). The
// value is read as TOML; a bare word that is not valid TOML is taken as a
// string. Same type rules and validation as the file; on error `m` is left
// unchanged. No '=' / empty key or value / unparsable value / "mixer.*" key
// -> ErrorKind::usage; unknown key, wrong type, invalid value -> rules.
// data.* accepts any scalar (added if absent). Records the assignment in
// m.overrides; `m.text` is left as parsed (any override makes a run open) —
// except one that moves a [grid] axis to another of its values: that is a
// point of the protocol's grid, not an override, and the call returns true.
bool apply_override(Manifest& m, const std::string& assignment);

// The [grid] axis named `key` ("model.d_model"), or nullptr.
const GridAxis* grid_axis(const Manifest& m, const std::string& key);
// The grid point a configuration stands on: each axis and its value, as
// "model.d_model=128" (empty for a manifest without [grid]).
std::vector<std::string> grid_point(const Manifest& m);

// The [settings] entry of that name, or nullptr.
const ProtocolSetting* find_setting(const Manifest& m, const std::string& name);
// Its changes as --set takes them: {"data.vocab_size=32"}.
std::vector<std::string> setting_assignments(const ProtocolSetting& s);
// m.setting, or kBaselineSetting for the file's own configuration.
std::string setting_name(const Manifest& m);
// m at the setting `name` ("" or kBaselineSetting: m itself): its changes
// applied, not recorded as overrides. Unknown name: lra::Error(usage) listing them.
Manifest at_setting(const Manifest& m, const std::string& name);
// After a command's --set assignments: when m.overrides make every change of
// a setting (the same keys, the same values; the setting with the most
// changes if several), those assignments are that setting, not overrides:
// m.setting names it and they leave m.overrides (any others stay: an open run
// at that setting). Returns whether a setting was found.
bool settle_setting(Manifest& m);

// Offset of the first byte of `s` that is not well-formed UTF-8, or npos.
// Command-line assignments (--set, mixer options) must be UTF-8 text: they
// end up in result.json, checkpoints and messages.
size_t invalid_utf8_at(std::string_view s);
// Throws ErrorKind::usage naming the first bad byte when `assignment` is not UTF-8.
void require_utf8_assignment(std::string_view assignment);

// Semantic checks shared by parse_manifest and apply_override.
void validate(const Manifest& m);

// The resolved configuration for result files, keyed like the manifest:
// {"model": {...}, "train": {..., "betas": [b1, b2]}, "data": {...}, "rules": {...}}.
nlohmann::json to_json(const Manifest& m);

// The inverse of to_json: the Manifest a result's recorded "config" describes,
// read through the same field tables (optional keys absent = their defaults,
// an unknown key, a missing required key or a wrong type is Error(data)
// naming `source` and the key), then validated like a manifest file (rules).
// `task` is the result's task.name. Every rebuild of a recorded model starts here.
Manifest config_manifest(const nlohmann::json& config, const std::string& task, const std::string& source);

// The first phase's training settings: [pretrain]'s keys with the trial seed
// (train.seed) and, for the unused evaluation batch, its own batch size.
TrainConfig pretraining_train_config(const Manifest& m);

// The trial seeds of a complete submission: rules.seeds, or [train.seed] when absent.
std::vector<int64_t> trial_seeds(const Manifest& m);

// Valid keys, in manifest order (for messages and for tools).
const std::vector<std::string>& model_keys();
const std::vector<std::string>& train_keys();
const std::vector<std::string>& rules_keys();
const std::vector<std::string>& pretrain_keys();

}  // namespace lra::host
