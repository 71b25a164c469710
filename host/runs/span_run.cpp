// runs/span_run.cpp — see span_run.h.
#include "runs/span_run.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/autograd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "common/text.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "lra/status.h"
#include "model/mixer_call.h"
#include "plugins/python_mixer.h"
#include "runs/trained_run.h"
#include "train/batches.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSpanSchema = "lrahost.span/v1";

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// The plugins on this host that can return attention probabilities, for the
// message that refuses one that cannot. The Python bridge is no mixer of its
// own (each class declares its capabilities): it is named as what it is.
std::string plugins_with_probs() {
  std::vector<std::string> names;
  for (const auto& p : discover_plugins())
    if (p.error.empty() && p.problems.empty() && p.descriptor.kind == LRA_KIND_MIXER &&
        p.descriptor.name != kPythonPluginName && (p.descriptor.capabilities & LRA_CAP_ATTENTION_PROBS))
      names.push_back(p.descriptor.name);
  return (names.empty() ? "none found" : text::join(names)) +
         std::string(", or a Python class that declares lra_capabilities = {\"attention_probs\"}");
}

// What every reported value depends on (docs/span.md, "The choices").
nlohmann::json choices_json(const RunRecord& run, bool cls, bool paired) {
  return {
      {"distance", "index distance |i - j| in the flattened token sequence (images: row-major pixel index, not 2-D "
                   "distance)"},
      {"padding", "excluded: padded queries are not counted and padded keys carry no weight"},
      {"cls_token", cls},
      {"cls", !cls ? "none: the model inserts no CLS token (pooling = " + run.model.pooling + ")"
              : run.summary == SummaryPosition::after_last
                  ? "excluded: the CLS token sits after each example's last real token (model.summary = after_last); "
                    "its row and column are left out and every remaining row is renormalised to sum 1"
                  : "excluded: the CLS row and column are left out and every remaining row is renormalised to sum 1"},
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
      {"sequence_length", encoder_positions(run.model)},
      {"gradient_point", "each block's mixer alone, differentiated at the input it received in the trained model's "
                         "forward pass (after the block's LayerNorm), in evaluation mode"},
      {"gradient_weights", "w_j = squared norm over channels of d<u, y_q>/dx_j for a random Gaussian u: an unbiased "
                           "estimate of the squared Frobenius norm of dy_q/dx_j; counted keys only"},
      {"gradient_queries", "per sequence and layer, `queries_per_sequence` rows drawn uniformly among the counted "
                           "positions, with their projections, from mt19937_64 seeded by `seed` (its own stream)"},
      {"gradient_radius", "the smallest distance r whose keys |q - j| <= r hold `coverage` of the row's weight"},
  };
}

// The run's mixer. Every mixer has a gradient span; the attention span
// needs LRA_CAP_ATTENTION_PROBS.
const LoadedPlugin& open_span_mixer(const RunRecord& run, const std::optional<std::string>& plugin, bool* same_file,
                                    spdlog::logger& log) {
  const LoadedPlugin& mixer = open_run_mixer(run, plugin, same_file);
  if (!(mixer.descriptor.capabilities & LRA_CAP_ATTENTION_PROBS))
    log.info("plugin '{}' does not declare attention_probs: only its gradient span is measured (attention "
             "probabilities here: {})", mixer.descriptor.name, plugins_with_probs());
  if (!*same_file)
    log.warn("plugin file {} differs from the one the run trained with (SHA-256 {}, recorded {}); measuring with it",
             mixer.descriptor.file.string(), mixer.sha256, run.plugin_sha256);
  return mixer;
}

fs::path span_out(const SpanArgs& a) {
  const fs::path out = a.out ? fs::path(*a.out) : fs::path(a.run) / "span.json";
  if (!out.parent_path().empty() && !fs::is_directory(out.parent_path()))
    throw Error(ErrorKind::usage, "--out " + out.string() + ": directory " + out.parent_path().string() +
                                      " does not exist; create it or choose another path");
  return out;
}

// One layer's probabilities of the last forward pass, checked, summed.
span::ModuleSums layer_sums(const LoadedPlugin& mixer, size_t l, const at::Tensor& probs, const at::Tensor& valid,
                            bool cls) {
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
  return span::module_sums(probs, valid, cls);
}

// One query row per sequence among its counted positions, drawn uniformly
// (a sequence without any keeps position 0, whose row is then not counted).
at::Tensor draw_queries(const at::Tensor& counted, std::mt19937_64& rng) {
  const auto c = counted.to(at::kCPU, at::kBool).contiguous();
  const int64_t B = c.size(0), L = c.size(1);
  std::vector<int64_t> q(static_cast<size_t>(B), 0);
  const bool* p = c.data_ptr<bool>();
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> real;
    for (int64_t j = 0; j < L; ++j)
      if (p[b * L + j]) real.push_back(j);
    if (!real.empty()) q[static_cast<size_t>(b)] = real[rng() % real.size()];
  }
  return torch::tensor(q, torch::kLong).to(counted.device());
}

// One layer's mixer, differentiated at what it received in the forward pass:
// for each of `queries` draws, one query row per sequence and a random
// Gaussian projection of its output (span/gradient_span.h).
span::GradientSums layer_gradient(lra::Mixer& mixer, const at::Tensor& input, const at::Tensor& mask,
                                  const at::Tensor& counted, int64_t queries, double coverage, std::mt19937_64& rng) {
  torch::AutoGradMode grad_on(true);
  const auto x = input.detach().clone().requires_grad_(true);
  const auto y = call_mixer(mixer, x, mask);
  const int64_t B = y.size(0), D = y.size(2);
  span::GradientSums sums;
  for (int64_t k = 0; k < queries; ++k) {
    const auto q = draw_queries(counted, rng);
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(rng());
    const auto u = at::randn({B, D}, gen, at::TensorOptions().dtype(at::kFloat)).to(y.device(), y.scalar_type());
    const auto row = y.gather(1, q.view({B, 1, 1}).expand({B, 1, D})).squeeze(1);  // [B, D]
    const auto g = torch::autograd::grad({(row * u).sum()}, {x}, {}, /*retain_graph=*/k + 1 < queries)[0];
    sums = sums + span::gradient_sums(g.detach().to(at::kDouble).pow(2).sum(-1), q, counted, coverage);
  }
  return sums;
}

struct Spans {
  std::optional<span::Summary> attention;  // mixers that declare attention_probs
  span::GradientSummary gradient;
};

// The drawn examples through the model in batches: every layer's attention
// probabilities (where the mixer reports them) and input gradients accumulated.
Spans accumulate_span(Classifier& model, const LoadedPlugin& mixer, const lra::Split& val,
                      const std::vector<int64_t>& indices, const SpanArgs& a, int64_t max_len,
                      const torch::Device& device, bool cls, SummaryPosition summary) {
  // A CLS token after each example's last real token (rules/summary_position.h)
  // is the column just past the example: never counted, like padding.
  const bool cls_first = cls && summary != SummaryPosition::after_last;
  const bool probs = (mixer.descriptor.capabilities & LRA_CAP_ATTENTION_PROBS) != 0;
  const auto samples = static_cast<int64_t>(indices.size());
  const auto& blocks = model->blocks();
  for (Block block : blocks) {
    block->mixer->set_record_attention(probs);
    block->set_capture(true);
  }
  std::mt19937_64 rng(a.seed ^ 0x5eed0f9a0d1e7715ull);  // the query rows and projections: their own stream
  span::Accumulator acc;
  span::GradientAccumulator gradients;
  torch::NoGradGuard no_grad;
  for (int64_t start = 0; start < samples; start += a.batch) {
    const std::vector<int64_t> idx(indices.begin() + start, indices.begin() + std::min(samples, start + a.batch));
    const Batch b = make_batch(val, idx, max_len).to(device);
    model->forward(b.ids, b.mask, b.ids2, b.mask2);
    // The positions the mixers treated as real (masked pixels excluded
    // under padding_mask = "nonzero_tokens", like length padding).
    auto valid = span::encoder_mask(model->key_mask(b.ids, b.mask),
                                    b.mask2.defined() ? model->key_mask(b.ids2, b.mask2) : b.mask2, cls_first);
    if (cls && !cls_first) valid = torch::cat({valid, torch::zeros_like(valid.narrow(1, 0, 1))}, 1);
    if (probs) {
      std::vector<span::ModuleSums> layers;
      for (size_t l = 0; l < blocks.size(); ++l)
        layers.push_back(layer_sums(mixer, l, blocks[l]->mixer->last_attention(), valid, cls_first));
      acc.add(layers);
    }
    std::vector<span::GradientSums> layers;
    for (const auto& block : blocks)
      layers.push_back(layer_gradient(*block->mixer, block->captured_input(), block->captured_mask(), valid,
                                      a.queries, a.coverage, rng));
    gradients.add(layers);
  }
  Spans out;
  if (probs) out.attention = acc.summary();
  out.gradient = gradients.summary();
  return out;
}

// What span.json records besides the plugin and the choices.
nlohmann::json span_counts(const span::Summary& s) {
  nlohmann::json per_head = nlohmann::json::array();
  for (const auto& heads : s.per_head) per_head.push_back(heads);
  return {{"span", s.span},
          {"per_layer", s.per_layer},
          {"per_head", per_head},
          {"counts",
           {{"sequences", s.sequences},
            {"sequences_without_queries", s.sequences_without_queries},
            {"query_rows", s.queries},
            {"massless_query_rows", s.massless_queries}}},
          {"excluded_mass", s.excluded_mass}};
}

nlohmann::json gradient_json(const span::GradientSummary& g, const SpanArgs& a) {
  return {{"distance", g.distance},
          {"radius", g.radius},
          {"coverage", a.coverage},
          {"queries_per_sequence", a.queries},
          {"per_layer_distance", g.per_layer_distance},
          {"per_layer_radius", g.per_layer_radius},
          {"counts",
           {{"sequences", g.sequences},
            {"sequences_without_rows", g.sequences_without_rows},
            {"query_rows", g.rows},
            {"massless_query_rows", g.massless_rows}}}};
}

nlohmann::json plugin_json(const LoadedPlugin& mixer, const RunRecord& run, bool same_file) {
  return {{"name", mixer.descriptor.name},
          {"version", mixer.descriptor.version},
          {"file", mixer.descriptor.file.string()},
          {"sha256", mixer.sha256},
          {"same_file_as_run", same_file},
          {"options", run.plugin_options}};
}

}  // namespace

SpanOutcome measure_span(const SpanArgs& a, spdlog::logger& log) {
  const auto wall_start = std::chrono::steady_clock::now();
  const int threads = effective_threads(a.threads);
  configure_cpu_threads(threads);

  // 1. The run and its plugin.
  const RunRecord run = read_run_record(a.run);
  bool same_file = true;
  const LoadedPlugin& mixer = open_span_mixer(run, a.plugin, &same_file, log);
  SpanOutcome r;
  r.plugin = run.plugin_name;
  r.task = run.task;
  r.out = span_out(a);

  // 2. The run's data, checked against its fingerprint, and the seeded draw.
  const LoadedPlugin& task = open_plugin(run.task, LRA_KIND_TASK);
  LoadedData data = load_run_data(run, task, a.data_dir, threads);
  const lra::Split& val = data.dataset.val;
  const auto available = static_cast<int64_t>(val.size());
  if (available == 0)
    throw Error(ErrorKind::data, "the " + run.task + " data under " + data.dataset.source +
                                     " has no validation examples to measure the span on");
  r.samples = std::min(a.samples, available);
  if (r.samples < a.samples)
    log.info("--samples {} is more than the {} validation examples: using all {}", a.samples, available, available);
  const std::vector<int64_t> indices = IndexStream(available, a.seed).next(r.samples);

  // 3. The trained model, evaluation mode (no dropout), recording probabilities.
  const torch::Device device = pick_device(a.device);
  check_run_summary(run, mixer, data.dataset.info);
  Classifier model = load_trained_classifier(run, mixer, data.dataset.info, device);
  const bool cls = run.model.pooling == "cls";
  log.info("span: {} on {}, {} of {} validation examples (seed {}), {} layers, device {}", run.plugin_name, run.task,
           r.samples, available, a.seed, model->blocks().size(), describe_device(device));
  Spans spans = accumulate_span(model, mixer, val, indices, a, run.model.max_len, device, cls, run.summary);
  r.attention = spans.attention;
  r.gradient = spans.gradient;

  // 4. span.json, atomically.
  nlohmann::json doc = {
      {"schema", kSpanSchema},
      {"run", run.dir.string()},
      {"result_digest", run.result.value("digest", "")},
      {"plugin", plugin_json(mixer, run, same_file)},
      {"task", run.task},
      {"split", "validation"},
      {"validation_examples", available},
      {"samples_requested", a.samples},
      {"samples", r.samples},
      {"all_validation_examples", r.samples == available},
      {"seed", a.seed},
      {"batch", a.batch},
      {"choices", choices_json(run, cls, data.dataset.info.paired)},
      {"indices", indices},
      {"device", describe_device(device)},
      {"threads", threads},
      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                {"git_dirty", build_info().git_dirty}}},
      {"created_at", utc_now()},
      {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()},
  };
  if (r.attention) {
    doc.update(span_counts(*r.attention));
  } else {
    doc["span"] = nullptr;  // no attention probabilities: the attention span is undefined
    doc["attention_span"] = "not defined: plugin '" + mixer.descriptor.name + "' does not declare attention_probs";
  }
  doc["gradient"] = gradient_json(r.gradient, a);
  write_file_atomic(r.out, doc.dump(2) + "\n");
  return r;
}

}  // namespace lra::host
