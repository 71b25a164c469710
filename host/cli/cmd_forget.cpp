// `lrahost forget`: the forgetting curve (reference forgetting-curve.md).
//   --plugin P      train the manifest's causal LM with P as the mixer, then measure it
//   --torchscript F measure a causal LM exported to TorchScript
//   --compare J...  overlay curves from forgetting.json files or the reference
//                   tool's result files, with their memory lengths recomputed
// Every check (plugin, manifest, corpus, budget) runs before anything is
// written; the outputs appear only when the whole measurement is done.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <torch/cuda.h>
#include <torch/serialize.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "plugins/conformance.h"
#include "plugins/mixer_options.h"
#include "runs/official_registry.h"
#include "cli/console_log.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "plugins/mixer_factory.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/build_info.h"
#include "common/plugin_calls.h"
#include "common/sha256.h"
#include "forgetting/corpus.h"
#include "forgetting/lm_training.h"
#include "forgetting/measure.h"
#include "forgetting/plot_svg.h"
#include "forgetting/report_json.h"
#include "forgetting/torchscript_lm.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/causal_lm.h"
#include "plugins/descriptor.h"
#include "results/system_info.h"
#include "rules/rules.h"
#include "train/autocast.h"
#include "train/module_io.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

using namespace forgetting;
namespace fs = std::filesystem;

// The measurement settings of [data] (validated here: the forgetting task is
// the host's own, not a task plugin) and their command-line overrides.
struct MeasureSettings {
  std::string corpus = "brown";
  int64_t max_length = 0, granularity = 0, repeats = 0;
  std::string granularity_type;
  uint64_t seed = 0;
  // Optional key (forgetting-v1.1): bos before every training document, as
  // real tokenizers do. Absent = false, what forgetting-v1.0 trained with.
  bool document_bos = false;
};

MeasureSettings measure_settings(const Manifest& m) {
  static const std::vector<std::string> known = {"corpus",  "test_max_length", "granularity", "granularity_type",
                                                 "repeats", "sample_seed",     "document_bos"};
  ParamReader d(m.data, m.source + " [data]");
  for (const auto& [k, v] : m.data)
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw Error(ErrorKind::rules, m.source + ": unknown key 'data." + k + "' for task \"forgetting\" (valid keys: "
                                        "corpus, test_max_length, granularity, granularity_type, repeats, sample_seed, document_bos)");
  MeasureSettings s;
  s.corpus = d.get_string("corpus");
  s.max_length = d.get_int("test_max_length");
  s.granularity = d.get_int("granularity");
  s.granularity_type = d.get_string("granularity_type");
  s.repeats = d.get_int("repeats");
  s.seed = static_cast<uint64_t>(d.get_int("sample_seed"));
  if (d.has("document_bos")) s.document_bos = d.get_bool("document_bos");
  return s;
}

MeasureConfig measure_config(const ForgetArgs& a, const MeasureSettings& s, int64_t bos, int64_t eos) {
  MeasureConfig c;
  c.max_length = a.max_len.value_or(s.max_length);
  c.granularity = a.granularity.value_or(s.granularity);
  c.granularity_type = a.granularity_type.value_or(s.granularity_type);
  c.repeats = a.repeats.value_or(s.repeats);
  c.samples = {bos, eos, a.seed ? static_cast<uint64_t>(*a.seed) : s.seed};
  if (a.batch_tokens > 0) c.batch_tokens = a.batch_tokens;
  test_lengths(c.max_length, c.granularity, c.granularity_type);  // bad values fail before any work
  if (c.repeats < 1) throw Error(ErrorKind::usage, "--repeats " + std::to_string(c.repeats) + ": expected at least 1");
  return c;
}

std::vector<int32_t> bytes_to_ids(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

nlohmann::json corpus_json(const Corpus& c) {
  return {{"name", c.name},
          {"source", c.source},
          {"sha256", c.sha256},
          {"split_rule", c.split_rule},
          {"train_bytes", c.train.size()},
          {"test_bytes", c.test.size()},
          {"train_documents", c.train_documents},
          {"test_documents", c.test_documents},
          {"tokenization", "bytes (id = byte value)"}};
}

// The plugin LM's corpus: how its text became tokens.
nlohmann::json trained_corpus_json(const Corpus& c, int64_t train_tokens, int64_t held_out_tokens) {
  nlohmann::json j = corpus_json(c);
  j["tokenization"] =
      "bytes (id = byte value); training and held-out streams: bos (" + std::to_string(kByteBos) +
      ") before each document; evaluation samples: the test part's bytes, bos only as the layouts' separator";
  j["train_tokens"] = train_tokens;
  j["held_out_tokens"] = held_out_tokens;
  return j;
}

nlohmann::json config_json(const MeasureConfig& c, int64_t train_length, const std::string& precision) {
  nlohmann::json lengths = test_lengths(c.max_length, c.granularity, c.granularity_type);
  return {{"train_length", train_length},
          {"max_length", c.max_length},
          {"granularity", c.granularity},
          {"granularity_type", c.granularity_type},
          {"repeats", c.repeats},
          {"sample_seed", c.samples.seed},
          {"bos", c.samples.bos},
          {"eos", c.samples.eos},
          {"lengths", lengths},
          {"scored_tokens", "last ceil(L/2) tokens of the second S"},
          {"irrelevant_text", "an L-token window of the second half of the evaluation text, per repetition"},
          {"memory_rule", "fine_length: the largest tested length with copy_mean > 0.99; coarse_length: the largest "
                          "with copy_mean - lm_mean > 0.01 (Table 3); *_prefix: the condition holds at every tested "
                          "length up to it; a failed length never holds"},
          {"precision", precision}};
}

nlohmann::json host_json() {
  return {{"version", build_info().version},
          {"git_revision", build_info().git_revision},
          {"git_dirty", build_info().git_dirty},
          {"torch_version", host_descriptor().torch_version},
          {"build_type", build_info().build_type},
          {"compiler", build_info().compiler}};
}

void log_point(spdlog::logger& log, const CurvePoint& p, size_t i, size_t n) {
  if (!p.ok())
    log.warn("length {:>6} ({}/{}): FAILED: {}", p.length, i + 1, n, p.error);
  else
    log.info("length {:>6} ({}/{}): copy {:.4f} ± {:.4f}   LM {:.4f} ± {:.4f}   p {:.3g}", p.length, i + 1, n,
             p.copy_mean, p.copy_std, p.lm_mean, p.lm_std, p.p_value);
}

std::string length_text(const MemoryLength& m) { return (m.censored ? "> " : "") + std::to_string(m.value); }

void print_lengths(const Curve& curve) {
  std::printf("  fine-grained memory length    %s tokens (largest tested length with copy accuracy > 99%%)\n",
              length_text(curve.fine).c_str());
  std::printf("  coarse-grained memory length  %s tokens (largest with copy accuracy > LM accuracy + 1 point)\n",
              length_text(curve.coarse).c_str());
  std::printf("  prefix rule                   fine %s, coarse %s (the condition at every tested length up to it)\n",
              length_text(curve.fine_prefix).c_str(), length_text(curve.coarse_prefix).c_str());
}

// Writes forgetting.json and forgetting.svg (each atomically) and prints the verdicts.
void write_outputs(const fs::path& out, const Curve& curve, nlohmann::json doc, bool log_x) {
  auto summary = curve_summary_json(curve);
  for (auto& [k, v] : summary.items()) doc[k] = v;
  // Both or neither (common/atomic_file.h).
  write_files_atomic(out, {{"forgetting.json", doc.dump(2) + "\n"},
                           {"forgetting.svg", forgetting_svg(curve, {curve.label, log_x})}});
  std::printf("\n%s: forgetting curve over %zu lengths%s\n", curve.label.c_str(), curve.points.size(),
              curve.complete ? "" : " (INCOMPLETE: some lengths failed, see forgetting.json)");
  print_lengths(curve);
  if (curve.train_length > 0) std::printf("  training length               %lld tokens\n", static_cast<long long>(curve.train_length));
  std::printf("  results                       %s, %s\n", (out / "forgetting.json").c_str(), (out / "forgetting.svg").c_str());
}

fs::path prepare_out(const std::string& out) {
  const fs::path dir(out);
  if (fs::exists(dir / "forgetting.json"))
    throw Error(ErrorKind::usage, "output directory " + dir.string() + " already holds a forgetting.json; choose another --out");
  return dir;
}

// Every file is read and checked before anything is written. The memory
// lengths are always recomputed from the points by the current rules.
int compare_command(const ForgetArgs& a) {
  std::vector<LoadedCurve> loaded;
  for (const auto& f : a.compare) loaded.push_back(load_curve_file(f));
  const fs::path out = a.out;
  if (fs::exists(out / "compare.svg"))
    throw Error(ErrorKind::usage, "output directory " + out.string() + " already holds a compare.svg; choose another --out");
  std::vector<Curve> curves;
  for (const auto& l : loaded) curves.push_back(l.curve);
  const std::string svg = compare_svg(curves, {a.title.value_or(""), a.log_x});
  fs::create_directories(out);
  write_file_atomic(out / "compare.svg", svg);
  std::printf("memory lengths recomputed from the points: fine/coarse = largest tested length where copy > 99%% / "
              "copy > LM + 1 point (Table 3); prefix = the condition at every tested length up to it; \"> L\" = "
              "still holds at the longest tested length L\n");
  std::printf("%-28s %8s %10s %13s %15s %10s  %s\n", "model", "fine", "coarse", "fine (prefix)", "coarse (prefix)",
              "train len", "source");
  for (size_t i = 0; i < loaded.size(); ++i) {
    const Curve& c = loaded[i].curve;
    const std::string train = c.train_length > 0 ? std::to_string(c.train_length) : "-";
    std::printf("%-28s %8s %10s %13s %15s %10s  %s (%s)%s\n", c.label.c_str(), length_text(c.fine).c_str(),
                length_text(c.coarse).c_str(), length_text(c.fine_prefix).c_str(),
                length_text(c.coarse_prefix).c_str(), train.c_str(), a.compare[i].c_str(), loaded[i].format.c_str(),
                c.complete ? "" : "  INCOMPLETE: some lengths failed");
  }
  for (const auto& l : loaded)
    for (const auto& note : l.notes) std::printf("note: %s\n", note.c_str());
  std::printf("plot: %s\n", (out / "compare.svg").c_str());
  return 0;
}

int torchscript_command(const ForgetArgs& a, spdlog::logger& log) {
  if (!a.bos || !a.eos)
    throw Error(ErrorKind::usage, "--torchscript needs --bos ID and --eos ID (the model's separator and end ids)");
  if (a.ids_file && a.corpus)
    throw Error(ErrorKind::usage, "--ids and --corpus both given: --ids FILE is the evaluation text already tokenized");
  const MeasureSettings s = measure_settings(load_preset(kForgettingTask, "official"));
  MeasureConfig mc = measure_config(a, s, *a.bos, *a.eos);
  mc.max_batch = 1;  // the TorchScript contract is [1, T]

  std::vector<int32_t> stream;
  nlohmann::json corpus;
  if (a.ids_file) {
    stream = read_ids_file(*a.ids_file);
    validate_ids(stream, 0);
    std::string bytes(reinterpret_cast<const char*>(stream.data()), stream.size() * sizeof(int32_t));
    corpus = {{"name", fs::path(*a.ids_file).filename().string()},
              {"source", fs::absolute(*a.ids_file).string()},
              {"sha256", sha256_hex(bytes)},
              {"tokens", stream.size()},
              {"tokenization", "token ids from the file (little-endian int32)"}};
  } else {
    // Nothing is trained here, so the whole corpus is evaluation text.
    Corpus c = a.corpus ? load_text_corpus(*a.corpus, 1) : load_brown(find_brown_dir(""));
    stream = bytes_to_ids(c.train);
    stream.insert(stream.end(), c.test.begin(), c.test.end());
    corpus = corpus_json(c);
    corpus["evaluation_text"] = "train and test parts together (a TorchScript model is not trained here)";
  }
  make_samples(stream, mc.max_length, 0, mc.samples);  // corpus size checked before loading the model

  const torch::Device device = pick_device(a.device);
  TorchScriptLM model(*a.torchscript, device);
  const fs::path out = prepare_out(a.out);
  log.info("measuring {} on {} ({} tokens of evaluation text), lengths up to {}", a.torchscript->c_str(),
           corpus["name"].get<std::string>(), stream.size(), mc.max_length);
  const auto t0 = std::chrono::steady_clock::now();
  Curve curve = measure_curve([&](const at::Tensor& ids) { return model.argmax(ids); }, stream, mc,
                              [&](const CurvePoint& p, size_t i, size_t n) { log_point(log, p, i, n); });
  curve.label = fs::path(*a.torchscript).stem().string();
  curve.train_length = a.train_len.value_or(0);
  if (model.vocab_size() > 0) validate_ids(stream, model.vocab_size());
  fs::create_directories(out);
  nlohmann::json doc = {
      {"schema", kForgettingSchema},
      {"label", curve.label},
      {"configuration", config_json(mc, curve.train_length, "float32 (as exported)")},
      {"corpus", corpus},
      {"model",
       {{"kind", "torchscript"},
        {"file", fs::absolute(*a.torchscript).string()},
        {"sha256", sha256_file(*a.torchscript)},
        {"vocab_size", model.vocab_size()}}},
      {"host", host_json()},
      {"system", system_info()},
      {"timing", {{"measure_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                  {"device", device.str()}}},
      {"command_line", a.command_line},
      {"finished_at", utc_now()},
  };
  write_outputs(out, curve, std::move(doc), a.log_x);
  return 0;
}

// Positions of the LM: rotary inside mixers that declare LRA_CAP_ROTARY; for
// any other causal mixer, the manifest's model.positions_without_rotary.
std::string lm_positions(const Descriptor& d, const Manifest& manifest) {
  if (d.capabilities & LRA_CAP_ROTARY) return "rotary";
  const std::string& p = manifest.model.positions_without_rotary;
  if (p.empty())
    throw Error(ErrorKind::plugin,
                "plugin '" + d.name + "' does not declare LRA_CAP_ROTARY, and " + manifest.source +
                    " gives the LM positions only through rotary embeddings in the mixers (it has no "
                    "model.positions_without_rotary, as releases before forgetting-v1.2); use the current official "
                    "or smoke manifest, or add --set model.positions_without_rotary=none (or sinusoidal)");
  return p;
}

int plugin_command(const ForgetArgs& a, spdlog::logger& log) {
  const auto wall_start = std::chrono::steady_clock::now();
  const LoadedPlugin& mixer = open_plugin(*a.plugin, LRA_KIND_MIXER);
  if (!(mixer.descriptor.capabilities & LRA_CAP_CAUSAL))
    throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "' cannot be the mixer of a causal LM: the "
                                       "forgetting curve needs LRA_CAP_CAUSAL (position i reads only positions <= i); "
                                       "it declares " +
                                       nlohmann::json(capability_names(mixer.descriptor.capabilities)).dump());

  Manifest manifest = a.manifest ? load_manifest_file(*a.manifest) : load_preset(kForgettingTask, a.preset);
  if (manifest.task != kForgettingTask)
    throw Error(ErrorKind::rules, manifest.source + ": manifest is for task '" + manifest.task +
                                      "', not 'forgetting' (lrahost forget takes forgetting manifests: "
                                      "manifests/forgetting-v1/ or manifests/smoke/forgetting.toml)");
  std::vector<std::string> overrides;
  const auto mixer_sets = apply_sets(a.sets, manifest, &overrides);
  const lra::Params mixer_options = resolve_mixer_options(mixer, mixer_sets);
  const MeasureSettings settings = measure_settings(manifest);
  const MeasureConfig mc = measure_config(a, settings, kByteBos, kByteEos);
  std::optional<ReleasedManifest> release;  // the released official manifest this one is, if any
  RunChoices choices = run_choices(kForgettingTask, a.manifest ? "manifest " + manifest.source : "preset '" + a.preset + "'",
                                   manifest.text, &release);
  choices.overrides = overrides;
  RunDivision division = classify_run(choices);
  if (a.max_len || a.granularity || a.granularity_type || a.repeats || a.seed) {
    division.name = "open";
    division.reasons.push_back("measurement options changed on the command line");
  }

  // Corpus: the manifest's (Brown) unless --corpus; training on its train part, curve on its test part.
  if (a.ids_file) throw Error(ErrorKind::usage, "--ids is for --torchscript models; --plugin trains a byte-level LM");
  const size_t min_bytes = static_cast<size_t>(std::max<int64_t>(2 * mc.max_length, manifest.model.max_len + 1));
  Corpus corpus = a.corpus ? load_text_corpus(*a.corpus, min_bytes)
                           : (settings.corpus == "brown"
                                  ? load_brown(find_brown_dir(""))
                                  : throw Error(ErrorKind::rules, manifest.source + ": data.corpus = \"" + settings.corpus +
                                                                      "\": the only named corpus is \"brown\"; pass "
                                                                      "other text with --corpus DIR|FILE"));
  // With data.document_bos, training (and its held-out loss) sees bos at every
  // document start, as the measurement's layouts use it; S and I are windows
  // of the test part's bytes either way.
  const auto train_ids = settings.document_bos ? document_stream(corpus.train, corpus.train_document_starts, kByteBos)
                                               : bytes_to_ids(corpus.train);
  const auto held_out_ids = settings.document_bos ? document_stream(corpus.test, corpus.test_document_starts, kByteBos)
                                                  : bytes_to_ids(corpus.test);
  const auto test_ids = bytes_to_ids(corpus.test);
  make_samples(test_ids, mc.max_length, 0, mc.samples);
  log.info("corpus {}: {} train / {} test bytes ({} / {} documents), sha256 {}", corpus.name,
           with_commas(static_cast<int64_t>(corpus.train.size())), with_commas(static_cast<int64_t>(corpus.test.size())),
           corpus.train_documents, corpus.test_documents, corpus.sha256.substr(0, 16));

  // Models: the same LM with the reference softmax attention sets the budget.
  CausalLMSpec spec{manifest.model, kByteVocab, static_cast<uint64_t>(manifest.train.seed)};
  spec.positions = lm_positions(mixer.descriptor, manifest);
  torch::manual_seed(manifest.train.seed);
  const int64_t reference_params = count_parameters(*CausalLM(spec, make_reference_attention));
  const ParamBudget budget = compute_param_budget(reference_params, manifest.rules.param_budget_ratio);
  torch::manual_seed(manifest.train.seed);
  const MixerFactory make_mixer = plugin_mixer_factory(mixer, mixer_options);
  std::vector<lra::MixerSpec> mixer_specs;  // each block's, for the conformance checks
  CausalLM model(spec, recording_specs(make_mixer, &mixer_specs));
  const int64_t total_params = count_parameters(*model);
  log.info("model: {} parameters ({} in the mixers); reference {}; budget {}", with_commas(total_params),
           with_commas(model->mixer_parameters()), with_commas(reference_params), with_commas(budget.budget));
  enforce_param_budget(budget, total_params, mixer.descriptor.name);
  // The plugin keeps the promises its descriptor makes, causal above all (cli/conformance.h).
  log.info("{}", enforce_conformance(mixer.descriptor.name,
                                     check_conformance(mixer.descriptor.capabilities, make_mixer, mixer_specs,
                                                       {1, static_cast<uint64_t>(manifest.train.seed), true,
                                                        spec.rotary_base, pick_device(a.device).str()})));

  const fs::path out = prepare_out(a.out);
  fs::create_directories(out);
  log.sinks().push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((out / "run.log").string(), true));
  plugin_calls::set_log_file((out / "run.log").string());  // errors and crashes end run.log too
  const torch::Device device = pick_device(a.device);
  const bool bf16 = device.is_cuda() && !a.fp32;
  log.info("lrahost {} — forgetting curve of {} ({} division), device {}{}, out {}", build_info().version,
           mixer.descriptor.name, division.name, device.str(), bf16 ? " (bf16 autocast)" : "", out.string());
  for (const auto& r : division.reasons) log.info("open division: {}", r);

  forgetting::LmTrainOptions topts;
  topts.train = manifest.train;
  topts.seq_len = manifest.model.max_len;
  topts.device = device;
  topts.bf16 = bf16;
  topts.live_progress = isatty(STDERR_FILENO);
  auto tr = train_causal_lm(model, train_ids, held_out_ids, topts, log);
  save_module(*model, out / "model.pt");

  model->eval();
  const auto t0 = std::chrono::steady_clock::now();
  Curve curve = measure_curve(
      [&](const at::Tensor& ids) {
        torch::NoGradGuard no_grad;
        CudaBf16Autocast autocast(bf16);
        return model->forward(ids.to(device)).argmax(-1).to(at::kCPU);
      },
      test_ids, mc, [&](const CurvePoint& p, size_t i, size_t n) { log_point(log, p, i, n); });
  const double measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  curve.label = mixer.descriptor.name;
  curve.train_length = manifest.model.max_len;

  nlohmann::json doc = {
      {"schema", kForgettingSchema},
      {"label", curve.label},
      {"division", division.name},
      {"division_reasons", division.reasons},
      {"configuration", config_json(mc, curve.train_length, bf16 ? "bfloat16 autocast" : "float32")},
      {"corpus", trained_corpus_json(corpus, static_cast<int64_t>(train_ids.size()),
                                     static_cast<int64_t>(held_out_ids.size()))},
      {"model",
       {{"kind", "plugin"},
        {"plugin", {{"name", mixer.descriptor.name}, {"version", mixer.descriptor.version},
                    {"file", mixer.descriptor.file.string()}, {"sha256", mixer.sha256},
                    {"options", params_json(mixer_options)}}},
        {"params", {{"total", total_params}, {"mixer", model->mixer_parameters()}, {"reference", reference_params},
                    {"budget", budget.budget}}},
        {"positions", spec.positions},  // "rotary" inside the mixers, else model.positions_without_rotary
        {"manifest", manifest.source},
        {"manifest_sha256", choices.manifest_sha256},
        {"manifest_release", release ? nlohmann::json(release->version) : nlohmann::json(nullptr)},
        {"overrides", overrides},
        {"config", to_json(manifest)},
        {"training", {{"final_train_loss", tr.final_train_loss},
                      {"test_loss", tr.test_loss},
                      {"test_bits_per_byte", tr.test_loss / std::log(2.0)},
                      {"test_tokens", tr.test_tokens},
                      {"history", tr.history}}}}},
      {"host", host_json()},
      {"system", system_info()},
      {"timing", {{"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()},
                  {"train_seconds", tr.train_seconds},
                  {"steps_per_second", tr.steps_per_second},
                  {"tokens_per_second", tr.tokens_per_second},
                  {"measure_seconds", measure_s},
                  {"peak_memory_bytes", peak_rss_bytes()},
                  {"peak_memory_kind", "process peak RSS"},
                  {"device", device.str()}}},
      {"command_line", a.command_line},
      {"finished_at", utc_now()},
  };
  write_outputs(out, curve, std::move(doc), a.log_x);
  std::printf("  held-out loss                 %.4f nats/byte (%.3f bits/byte) after %lld steps\n", tr.test_loss,
              tr.test_loss / std::log(2.0), static_cast<long long>(tr.steps));
  return 0;
}

}  // namespace

int forget_command(const ForgetArgs& a) {
  const int modes = (a.plugin ? 1 : 0) + (a.torchscript ? 1 : 0) + (a.compare.empty() ? 0 : 1);
  if (modes != 1)
    throw Error(ErrorKind::usage, "lrahost forget needs exactly one of --plugin NAME|PATH, --torchscript FILE or "
                                  "--compare A.json B.json ...");
  // One writer per output directory (common/dir_lock.h); created now, removed
  // again when the command fails before writing anything into it.
  const DirLock lock(a.out);
  if (!a.compare.empty()) return compare_command(a);
  configure_cpu_threads(effective_threads(a.threads));
  auto log = make_logger();
  return a.plugin ? plugin_command(a, *log) : torchscript_command(a, *log);
}

void add_forget_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<ForgetArgs>();
  auto* f = app.add_subcommand("forget", "Forgetting curve: train a causal LM around a mixer (or load a TorchScript "
                                         "LM) and measure how far back it copies its context");
  f->add_option("--plugin", a->plugin, "Mixer plugin (NAME or PATH) to train in the manifest's causal LM");
  f->add_option("--torchscript", a->torchscript, "A causal LM saved as TorchScript: forward(ids [1,T]) -> logits [1,T,V]");
  f->add_option("--compare", a->compare, "forgetting.json files or the reference tool's result files (JSON lists) to "
                                         "overlay in one plot (compare.svg), with their memory lengths");
  f->add_option("--out", a->out, "Output directory")->required();
  add_preset_option(f, a->preset, "official (forgetting-v1) or smoke (CPU-sized)");
  f->add_option("--manifest", a->manifest, "A forgetting manifest file instead of the preset (open division)");
  f->add_option("--set", a->sets, "KEY=VALUE manifest override (open division) or mixer.OPTION=VALUE");
  f->add_option("--corpus", a->corpus, "Text FILE or DIR of .txt files (default: the Brown corpus)");
  f->add_option("--ids", a->ids_file, "--torchscript only: evaluation text as raw little-endian int32 token ids");
  f->add_option("--bos", a->bos, "--torchscript only: the separator id ([bos] S [bos] S [eos])");
  f->add_option("--eos", a->eos, "--torchscript only: the end id");
  f->add_option("--train-len", a->train_len, "--torchscript only: the model's training length (reference lines)");
  f->add_option("--max-len", a->max_len, "Longest tested length L (default: the manifest's data.test_max_length)");
  f->add_option("--granularity", a->granularity, "Number of tested lengths (default: the manifest's)");
  f->add_option("--granularity-type", a->granularity_type, "linear or log spacing of the lengths")
      ->check(CLI::IsMember({"linear", "log"}));
  f->add_option("--repeats", a->repeats, "Samples per length (default: the manifest's)");
  add_seed_option(f, a->seed, "Sampling seed (default: the manifest's data.sample_seed)");
  f->add_option("--batch-tokens", a->batch_tokens, "Tokens per forward pass while measuring (default 65536)")
      ->check(CLI::NonNegativeNumber);
  f->add_option("--title", a->title, "--compare only: plot title");
  f->add_flag("--log-x", a->log_x, "Logarithmic length axis in the plots");
  add_fp32_flag(f, a->fp32, "On CUDA, train and measure in float32 instead of bfloat16 autocast");
  add_device_option(f, a->device);
  add_threads_option(f, a->threads);
  on_parsed(f, slot, a, [&slot](ForgetArgs& args) {
    args.command_line = slot.command_line;
    return forget_command(args);
  });
}

}  // namespace lra::host
