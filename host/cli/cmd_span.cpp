// `lrahost span --run DIR`: the LRA paper's required attention span (§2.3) of
// a trained run, over seeded random validation examples, per layer and head.
// The arithmetic is span/span.h; this file loads the run and reports.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "cli/commands.h"
#include "cli/console_log.h"
#include "common/utc_time.h"
#include "runs/trained_run.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "device/device.h"
#include "lra/status.h"
#include "span/span.h"
#include "train/batches.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

constexpr const char* kSpanSchema = "lrahost.span/v1";

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// The plugins on this host that can return attention probabilities, for the
// message that refuses one that cannot.
std::string plugins_with_probs() {
  std::string list;
  for (const auto& p : discover_plugins())
    if (p.error.empty() && p.problems.empty() && p.descriptor.kind == LRA_KIND_MIXER &&
        (p.descriptor.capabilities & LRA_CAP_ATTENTION_PROBS))
      list += (list.empty() ? "" : ", ") + p.descriptor.name;
  return list.empty() ? "none found" : list;
}

// What every reported value depends on (paper-tables.md §4 asks for each).
nlohmann::json choices_json(const RunRecord& run, bool cls, bool paired) {
  return {
      {"distance", "index distance |i - j| in the flattened token sequence (images: row-major pixel index, not 2-D "
                   "distance)"},
      {"padding", "excluded: padded queries are not counted and padded keys carry no weight"},
      {"cls_token", cls},
      {"cls", cls ? "excluded: the CLS row and column are left out and every remaining row is renormalised to sum 1"
                  : "none: the model inserts no CLS token (pooling = " + run.model.pooling + ")"},
      {"renormalisation", "each counted row is renormalised over the counted keys (a no-op apart from the CLS column, "
                          "as the mixer already gives padding zero weight)"},
      {"paired_inputs", paired ? nlohmann::json("each document of a pair is its own sequence: both towers share the "
                                                "encoder and never attend across documents, so sequences = 2 x samples")
                               : nlohmann::json(nullptr)},
      {"attention_dropout", "off (evaluation mode)"},
      {"averaging", "per sequence: mean over layers, heads and counted queries; then mean over sequences"},
      {"precision", "float32, no autocast"},
      {"sampling", "validation examples without replacement: the first `samples` of a permutation seeded by `seed` "
                   "(mt19937_64 Fisher-Yates)"},
      {"sequence_length", run.model.max_len + (cls ? 1 : 0)},
  };
}

void print_summary(const RunRecord& run, const span::Summary& s, int64_t samples, int64_t requested, uint64_t seed,
                   const std::filesystem::path& out) {
  std::printf("\nrequired attention span: %s on %s (%lld validation examples, seed %llu)\n", run.plugin_name.c_str(),
              run.task.c_str(), static_cast<long long>(samples), static_cast<unsigned long long>(seed));
  if (samples < requested)
    std::printf("  (all of the validation split: --samples %lld asked for more)\n", static_cast<long long>(requested));
  std::printf("  overall  %10.2f tokens  (%lld sequences, %lld query rows)\n", s.span,
              static_cast<long long>(s.sequences), static_cast<long long>(s.queries));
  size_t heads = 0;
  for (const auto& h : s.per_head) heads = std::max(heads, h.size());
  std::printf("  %-7s %10s", "layer", "mean");
  for (size_t h = 0; h < heads; ++h) std::printf(" %9s%zu", "head ", h);
  std::printf("\n");
  for (size_t l = 0; l < s.per_layer.size(); ++l) {
    std::printf("  %-7zu %10.2f", l, s.per_layer[l]);
    for (double v : s.per_head[l]) std::printf(" %10.2f", v);
    std::printf("\n");
  }
  std::printf("  span     %s\n", out.c_str());
}

}  // namespace

int span_command(const SpanArgs& a) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto log = make_logger();
  const int threads = effective_threads(a.threads);
  configure_cpu_threads(threads);

  // 1. The run and its plugin; a mixer that cannot report probabilities stops here.
  const RunRecord run = read_run_record(a.run);
  bool same_file = true;
  const LoadedPlugin& mixer = open_run_mixer(run, &same_file);
  if (!(mixer.descriptor.capabilities & LRA_CAP_ATTENTION_PROBS))
    throw Error(ErrorKind::plugin,
                "plugin '" + mixer.descriptor.name + "' (" + mixer.descriptor.file.string() +
                    ") does not declare the capability LRA_CAP_ATTENTION_PROBS (attention_probs): it cannot return "
                    "attention probabilities, so the required attention span of its run is undefined; mixers here "
                    "that can: " + plugins_with_probs());
  if (!same_file)
    log->warn("plugin file {} differs from the one the run trained with (SHA-256 {}, recorded {}); measuring with it",
              mixer.descriptor.file.string(), mixer.sha256, run.plugin_sha256);
  const std::filesystem::path out =
      a.out ? std::filesystem::path(*a.out) : std::filesystem::path(a.run) / "span.json";
  if (!out.parent_path().empty() && !std::filesystem::is_directory(out.parent_path()))
    throw Error(ErrorKind::usage, "--out " + out.string() + ": directory " + out.parent_path().string() +
                                      " does not exist; create it or choose another path");

  // 2. The run's data, checked against its fingerprint, and the seeded draw.
  const LoadedPlugin& task = open_plugin(run.task, LRA_KIND_TASK);
  LoadedData data = load_run_data(run, task, a.data_dir, threads);
  const lra::Split& val = data.dataset.val;
  const auto available = static_cast<int64_t>(val.size());
  if (available == 0)
    throw Error(ErrorKind::data, "the " + run.task + " data under " + data.dataset.source +
                                     " has no validation examples to measure the span on");
  const int64_t samples = std::min(a.samples, available);
  if (samples < a.samples)
    log->info("--samples {} is more than the {} validation examples: using all {}", a.samples, available, available);
  std::vector<int64_t> indices = IndexStream(available, a.seed).next(samples);

  // 3. The trained model, evaluation mode (no dropout), recording probabilities.
  const torch::Device device = pick_device(a.device);
  Classifier model = load_trained_classifier(run, mixer, data.dataset.info, device);
  for (const auto& block : model->blocks()) block->mixer->set_record_attention(true);
  const bool cls = run.model.pooling == "cls";
  const bool paired = data.dataset.info.paired;
  log->info("span: {} on {}, {} of {} validation examples (seed {}), {} layers, device {}", run.plugin_name, run.task,
            samples, available, a.seed, model->blocks().size(), describe_device(device));

  span::Accumulator acc;
  {
    torch::NoGradGuard no_grad;
    for (int64_t start = 0; start < samples; start += a.batch) {
      const std::vector<int64_t> idx(indices.begin() + start, indices.begin() + std::min(samples, start + a.batch));
      const Batch b = make_batch(val, idx, run.model.max_len).to(device);
      model->forward(b.ids, b.mask, b.ids2, b.mask2);
      // The positions the mixers treated as real (masked pixels excluded
      // under padding_mask = "nonzero_tokens", like length padding).
      const auto valid = span::encoder_mask(model->key_mask(b.ids, b.mask),
                                            b.mask2.defined() ? model->key_mask(b.ids2, b.mask2) : b.mask2, cls);
      std::vector<span::ModuleSums> layers;
      const auto& blocks = model->blocks();
      for (size_t l = 0; l < blocks.size(); ++l) {
        const auto probs = blocks[l]->mixer->last_attention();
        if (!probs.defined())
          throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "' declares attention_probs but layer " +
                                             std::to_string(l) + " kept no probabilities after a forward pass with "
                                             "set_record_attention(true) (Mixer::last_attention() is undefined)");
        if (probs.dim() != 4 || probs.size(0) != valid.size(0) || probs.size(2) != valid.size(1) ||
            probs.size(3) != valid.size(1))
          throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "': layer " + std::to_string(l) +
                                             " returned attention probabilities of shape " + shape_of(probs) +
                                             ", expected [" + std::to_string(valid.size(0)) + ", H, " +
                                             std::to_string(valid.size(1)) + ", " + std::to_string(valid.size(1)) +
                                             "] (Mixer::last_attention())");
        layers.push_back(span::module_sums(probs, valid, cls));
      }
      acc.add(layers);
    }
  }
  const span::Summary s = acc.summary();

  // 4. span.json, atomically; then the table a person reads.
  nlohmann::json per_head = nlohmann::json::array();
  for (const auto& heads : s.per_head) per_head.push_back(heads);
  nlohmann::json doc = {
      {"schema", kSpanSchema},
      {"run", run.dir.string()},
      {"result_digest", run.result.value("digest", "")},
      {"plugin",
       {{"name", mixer.descriptor.name},
        {"version", mixer.descriptor.version},
        {"file", mixer.descriptor.file.string()},
        {"sha256", mixer.sha256},
        {"same_file_as_run", same_file},
        {"options", run.plugin_options}}},
      {"task", run.task},
      {"split", "validation"},
      {"validation_examples", available},
      {"samples_requested", a.samples},
      {"samples", samples},
      {"all_validation_examples", samples == available},
      {"seed", a.seed},
      {"batch", a.batch},
      {"choices", choices_json(run, cls, paired)},
      {"span", s.span},
      {"per_layer", s.per_layer},
      {"per_head", per_head},
      {"counts",
       {{"sequences", s.sequences},
        {"sequences_without_queries", s.sequences_without_queries},
        {"query_rows", s.queries},
        {"massless_query_rows", s.massless_queries}}},
      {"excluded_mass", s.excluded_mass},
      {"indices", indices},
      {"device", describe_device(device)},
      {"threads", threads},
      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                {"git_dirty", build_info().git_dirty}}},
      {"created_at", utc_now()},
      {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()},
  };
  write_file_atomic(out, doc.dump(2) + "\n");
  print_summary(run, s, samples, a.samples, a.seed, out);
  return 0;
}

void add_span_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SpanArgs>();
  auto* sa = app.add_subcommand("span", "Required attention span (LRA paper section 2.3) of a trained run, per layer "
                                        "and head");
  sa->add_option("--run", a->run, "Run directory written by lrahost run (result.json, model.pt)")->required();
  sa->add_option("--samples", a->samples, "Validation examples, drawn at random")->check(CLI::PositiveNumber);
  add_seed_option(sa, a->seed, "Seed of the random draw (recorded)");
  sa->add_option("--batch", a->batch, "Examples per forward pass")->check(CLI::PositiveNumber);
  sa->add_option("--out", a->out, "Output JSON file (default: <run>/span.json)");
  sa->add_option("--data-dir", a->data_dir, "Data root (default: as for run)");
  add_device_option(sa, a->device);
  add_threads_option(sa, a->threads);
  on_parsed(sa, slot, a, [](SpanArgs& args) { return span_command(args); });
}

}  // namespace lra::host
