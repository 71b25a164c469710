// to_json: the resolved configuration for result files. Its output is hashed
// into results (the config digest): the keys and their values, integers and
// floats alike, must not change.
#include "manifest/manifest.h"

namespace lra::host {

nlohmann::json to_json(const Manifest& m) {
  using nlohmann::json;
  const ModelConfig& md = m.model;
  const TrainConfig& t = m.train;
  json data = json::object();
  for (const auto& [k, v] : m.data) {
    switch (v.index()) {
      case 0: data[k] = std::get<bool>(v); break;
      case 1: data[k] = std::get<int64_t>(v); break;
      case 2: data[k] = std::get<double>(v); break;
      default: data[k] = std::get<std::string>(v); break;
    }
  }
  json out = json{
      {"model",
       {{"layers", md.layers},
        {"d_model", md.d_model},
        {"heads", md.heads},
        {"qkv_dim", md.qkv_dim},
        {"ffn_dim", md.ffn_dim},
        {"dropout", md.dropout},
        {"attention_dropout", md.attention_dropout},
        {"pooling", md.pooling},
        {"positions", md.positions},
        {"max_len", md.max_len},
        {"padding_mask", md.padding_mask}}},
      {"train",
       {{"steps", t.steps},
        {"batch_size", t.batch_size},
        {"lr", t.lr},
        {"schedule", t.schedule},
        {"warmup", t.warmup},
        {"steps_per_cycle", t.steps_per_cycle},
        {"decay_steps", t.decay_steps},
        {"precision", t.precision},
        {"weight_decay", t.weight_decay},
        {"betas", json::array({t.beta1, t.beta2})},
        {"eps", t.eps},
        {"grad_clip", t.grad_clip},
        {"eval_every", t.eval_every},
        {"checkpoint_every", t.checkpoint_every},
        {"seed", t.seed},
        {"eval_batch_size", t.eval_batch_size}}},
      {"data", data},
      {"rules", {{"param_budget_ratio", m.rules.param_budget_ratio}, {"seeds", trial_seeds(m)}}},
  };
  // Only where the manifest has it: resolved configurations of older releases stay as they were.
  if (!md.positions_without_rotary.empty()) out["model"]["positions_without_rotary"] = md.positions_without_rotary;
  return out;
}

}  // namespace lra::host
