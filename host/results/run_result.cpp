#include "results/run_result.h"

#include "common/build_info.h"
#include "lra/abi.h"
#include "results/result.h"

namespace lra::host {
namespace {

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string abi_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

nlohmann::json host_json(const RunResultFacts& r) {
  const auto& b = build_info();
  return {{"version", b.version},
          {"git_revision", b.git_revision},
          {"git_dirty", b.git_dirty},
          {"sdk_abi", abi_text(LRA_ABI_MAJOR, LRA_ABI_MINOR)},
          {"torch_version", r.torch_version},
          {"cuda_version", nullptr},
          {"build_type", b.build_type},
          {"compiler", b.compiler}};
}

nlohmann::json plugin_json(const RunResultFacts::Plugin& p) {
  nlohmann::json j = {{"name", p.name},
          {"version", p.version},
          {"sdk_abi", abi_text(p.abi_major, p.abi_minor)},
          {"file", p.file},
          {"sha256", p.sha256},
          {"options", p.options},
          {"reference_settings", p.reference_settings},
          {"params", {{"total", p.total_params}, {"mixer", p.mixer_params}}},
          {"capabilities", p.capabilities}};
  if (!p.source.is_null()) j["source"] = p.source;  // a compiled plugin's result keeps its shape
  return j;
}

nlohmann::json task_json(const RunResultFacts::Task& t) {
  return {{"name", t.name},
          {"plugin_version", t.plugin_version},
          {"manifest", t.manifest},
          {"manifest_sha256", t.manifest_sha256},
          {"manifest_release", or_null(t.release)},
          {"preset", or_null(t.preset)},
          {"data_fingerprint", t.data_fingerprint},
          {"split_fingerprints", t.split_fingerprints},
          {"data_source", t.data_source},
          {"lra_release_files", t.lra_release_files},
          {"data_params", t.data_params},
          {"examples", {{"train", t.train}, {"val", t.val}, {"test", t.test}}}};
}

nlohmann::json metrics_json(const RunResultFacts::Metrics& m) {
  nlohmann::json j = {{"test_accuracy", m.test_accuracy},
                      {"test_loss", m.test_loss},
                      {"best_val_accuracy", m.best_val_accuracy},
                      {"best_val_step", m.best_val_step},
                      {"final_train_loss", m.final_train_loss},
                      {"final_train_accuracy", m.final_train_accuracy},
                      {"majority_class_rate", m.majority_class_rate}};
  if (m.sequence.is_object()) j.update(m.sequence);
  return j;
}

nlohmann::json timing_json(const RunResultFacts::Timing& t) {
  nlohmann::json j = {{"wall_seconds", t.wall_seconds},
          {"train_seconds", t.train_seconds},
          {"eval_seconds", t.eval_seconds},
          {"steps", t.steps},
          {"steps_per_second", t.steps_per_second},
          {"peak_memory_bytes", t.peak_memory_bytes},
          {"peak_memory_kind", t.peak_memory_kind},
          {"device", t.device},
          {"precision", t.precision},
          {"threads", t.threads},
          {"micro_batch", t.micro_batch},
          {"resumed_from", or_null(t.resumed_from)}};
  if (!t.cpu_kernels.empty()) j["cpu_kernels"] = t.cpu_kernels;
  if (!t.cuda_graphs.empty()) j["cuda_graphs"] = t.cuda_graphs;
  return j;
}

}  // namespace

nlohmann::json run_result_json(const RunResultFacts& r) {
  nlohmann::json j = {
      {"schema", kResultSchema},
      {"division", r.division.name},
      {"division_reasons", r.division.reasons},
      {"valid", true},
      {"invalid_reasons", nlohmann::json::array()},
      {"host", host_json(r)},
      {"system", r.system},
      {"plugin", plugin_json(r.plugin)},
      {"task", task_json(r.task)},
      {"rules", {{"reference_params", r.budget.reference}, {"param_budget_ratio", r.budget.ratio},
                 {"param_budget", r.budget.budget}}},
      {"seed", r.seed},
      {"distributed", {{"world_size", r.ranks.world_size}, {"backend", r.ranks.backend}, {"launcher", r.ranks.launcher}}},
      {"overrides", r.overrides},
      {"config", r.config},
      {"model", {{"file", "model.pt"}, {"sha256", r.model_sha256}, {"summary", r.model_summary}}},
      {"metrics", metrics_json(r.metrics)},
      {"history", r.history},
      {"timing", timing_json(r.timing)},
      {"command_line", r.command_line},
      {"started_at", r.started_at},
      {"finished_at", r.finished_at},
  };
  if (!r.optimizer.is_null()) j["optimizer"] = r.optimizer;
  if (!r.reference_configuration.is_null()) j["reference_configuration"] = r.reference_configuration;
  // A self-pretrained run (manifest [pretrain]): its first phase (pretrain/pretraining_phase.h).
  if (!r.pretraining.is_null()) j["pretraining"] = r.pretraining;
  // A sequence task: its decoding state, measured (runs/sequence_model.h).
  if (!r.state_size.is_null()) j["state_size"] = r.state_size;
  return j;
}

}  // namespace lra::host
