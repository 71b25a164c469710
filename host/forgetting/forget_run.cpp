// forgetting/forget_run.cpp — the two measurements of `lrahost forget`
// (forgetting/forget_run.h): an exported TorchScript LM, and the manifest's
// causal LM trained around a mixer plugin.
#include "forgetting/forget_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <torch/torch.h>
#include <spdlog/sinks/basic_file_sink.h>

#include "common/build_info.h"
#include "common/plugin_calls.h"
#include "common/sha256.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "forgetting/corpus.h"
#include "forgetting/forget_documents.h"
#include "forgetting/lm_training.h"
#include "forgetting/samples.h"
#include "forgetting/torchscript_lm.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/backbone.h"
#include "model/causal_lm.h"
#include "plugins/conformance.h"
#include "plugins/descriptor.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "results/system_info.h"
#include "train/autocast.h"
#include "train/module_io.h"

namespace lra::host::forgetting {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// --torchscript's evaluation text: an ids file, or a whole corpus (nothing is trained here).
std::vector<int32_t> torchscript_stream(const ForgetArgs& a, nlohmann::json* corpus) {
  std::vector<int32_t> stream;
  if (a.ids_file) {
    stream = read_ids_file(*a.ids_file);
    validate_ids(stream, 0);
    std::string bytes(reinterpret_cast<const char*>(stream.data()), stream.size() * sizeof(int32_t));
    *corpus = {{"name", fs::path(*a.ids_file).filename().string()},
               {"source", fs::absolute(*a.ids_file).string()},
               {"sha256", sha256_hex(bytes)},
               {"tokens", stream.size()},
               {"tokenization", "token ids from the file (little-endian int32)"}};
  } else {
    Corpus c = a.corpus ? load_text_corpus(*a.corpus, 1) : load_brown(find_brown_dir(""));
    stream = bytes_to_ids(c.train);
    stream.insert(stream.end(), c.test.begin(), c.test.end());
    *corpus = corpus_json(c);
    (*corpus)["evaluation_text"] = "train and test parts together (a TorchScript model is not trained here)";
  }
  return stream;
}

}  // namespace

ForgetOutcome forget_torchscript(const ForgetArgs& a, spdlog::logger& log) {
  if (!a.bos || !a.eos)
    throw Error(ErrorKind::usage, "--torchscript needs --bos ID and --eos ID (the model's separator and end ids)");
  if (a.ids_file && a.corpus)
    throw Error(ErrorKind::usage, "--ids and --corpus both given: --ids FILE is the evaluation text already tokenized");
  const MeasureSettings s = measure_settings(load_preset(kForgettingTask, "official"));
  MeasureConfig mc = measure_config(a, s, *a.bos, *a.eos);
  mc.max_batch = 1;  // the TorchScript contract is [1, T]
  nlohmann::json corpus;
  const std::vector<int32_t> stream = torchscript_stream(a, &corpus);
  make_samples(stream, mc.max_length, 0, mc.samples);  // corpus size checked before loading the model

  const torch::Device device = pick_device(a.device);
  TorchScriptLM model(*a.torchscript, device);
  ForgetOutcome r;
  r.out = prepare_out(a.out);
  log.info("measuring {} on {} ({} tokens of evaluation text), lengths up to {}", a.torchscript->c_str(),
           corpus["name"].get<std::string>(), stream.size(), mc.max_length);
  const auto t0 = Clock::now();
  r.curve = measure_curve([&](const at::Tensor& ids) { return model.argmax(ids); }, stream, mc,
                          [&](const CurvePoint& p, size_t i, size_t n) { log_point(log, p, i, n); });
  r.curve.label = fs::path(*a.torchscript).stem().string();
  r.curve.train_length = a.train_len.value_or(0);
  if (model.vocab_size() > 0) validate_ids(stream, model.vocab_size());
  fs::create_directories(r.out);
  nlohmann::json doc = {
      {"schema", kForgettingSchema},
      {"label", r.curve.label},
      {"configuration", config_json(mc, r.curve.train_length, "float32 (as exported)")},
      {"corpus", corpus},
      {"model",
       {{"kind", "torchscript"},
        {"file", fs::absolute(*a.torchscript).string()},
        {"sha256", sha256_file(*a.torchscript)},
        {"vocab_size", model.vocab_size()}}},
      {"host", host_json()},
      {"system", system_info()},
      {"timing", {{"measure_seconds", seconds_since(t0)}, {"device", device.str()}}},
      {"command_line", a.command_line},
      {"finished_at", utc_now()},
  };
  write_forgetting(r.out, r.curve, std::move(doc), a.log_x);
  return r;
}


namespace {

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

RunDivision plugin_division(const ForgetArgs& a, const PluginForget& p) {
  RunChoices choices = p.choices;
  choices.overrides = p.overrides;
  RunDivision division = classify_run(choices);
  if (a.max_len || a.granularity || a.granularity_type || a.repeats || a.seed) {
    division.name = "open";
    division.reasons.push_back("measurement options changed on the command line");
  }
  return division;
}

// The corpus: the manifest's (Brown) unless --corpus; training on its train
// part, the curve on its test part.
struct LmStreams {
  Corpus corpus;
  std::vector<int32_t> train, held_out, test;
};

LmStreams plugin_streams(const ForgetArgs& a, const PluginForget& p, spdlog::logger& log) {
  if (a.ids_file) throw Error(ErrorKind::usage, "--ids is for --torchscript models; --plugin trains a byte-level LM");
  const Manifest& manifest = p.manifest;
  const size_t min_bytes = static_cast<size_t>(std::max<int64_t>(2 * p.measure.max_length, manifest.model.max_len + 1));
  LmStreams s;
  s.corpus = a.corpus ? load_text_corpus(*a.corpus, min_bytes)
                      : (p.settings.corpus == "brown"
                             ? load_brown(find_brown_dir(""))
                             : throw Error(ErrorKind::rules, manifest.source + ": data.corpus = \"" + p.settings.corpus +
                                                                 "\": the only named corpus is \"brown\"; pass "
                                                                 "other text with --corpus DIR|FILE"));
  const Corpus& c = s.corpus;
  // With data.document_bos, training (and its held-out loss) sees bos at every
  // document start, as the measurement's layouts use it; S and I are windows
  // of the test part's bytes either way.
  s.train = p.settings.document_bos ? document_stream(c.train, c.train_document_starts, kByteBos) : bytes_to_ids(c.train);
  s.held_out = p.settings.document_bos ? document_stream(c.test, c.test_document_starts, kByteBos) : bytes_to_ids(c.test);
  s.test = bytes_to_ids(c.test);
  make_samples(s.test, p.measure.max_length, 0, p.measure.samples);
  log.info("corpus {}: {} train / {} test bytes ({} / {} documents), sha256 {}", c.name,
           with_commas(static_cast<int64_t>(c.train.size())), with_commas(static_cast<int64_t>(c.test.size())),
           c.train_documents, c.test_documents, c.sha256.substr(0, 16));
  return s;
}

// The LM around the mixer, within the budget the same LM with the reference
// softmax attention sets, and keeping its descriptor's promises
// (plugins/conformance.h), causal above all.
struct PluginLM {
  CausalLMSpec spec;
  CausalLM model{nullptr};
  int64_t reference_params = 0, total_params = 0;
  ParamBudget budget;
  std::vector<OptimizerGroup> groups;  // AdamW's, from the mixers' hints (train/optimizer_groups.h)
};

PluginLM build_plugin_lm(const ForgetArgs& a, const PluginForget& p, spdlog::logger& log) {
  const Manifest& manifest = p.manifest;
  const LoadedPlugin& mixer = *p.mixer;
  PluginLM lm;
  lm.spec = CausalLMSpec{manifest.model, kByteVocab, static_cast<uint64_t>(manifest.train.seed)};
  lm.spec.positions = lm_positions(mixer.descriptor, manifest);
  torch::manual_seed(manifest.train.seed);
  lm.reference_params = count_parameters(*CausalLM(lm.spec, make_reference_attention));
  lm.budget = compute_param_budget(lm.reference_params, manifest.rules.param_budget_ratio);
  torch::manual_seed(manifest.train.seed);
  const MixerFactory make_mixer = plugin_mixer_factory(mixer, p.mixer_options);
  std::vector<lra::MixerSpec> mixer_specs;  // each block's, for the conformance checks
  lm.model = CausalLM(lm.spec, recording_specs(make_mixer, &mixer_specs));
  lm.total_params = count_parameters(*lm.model);
  log.info("model: {} parameters ({} in the mixers); reference {}; budget {}", with_commas(lm.total_params),
           with_commas(lm.model->mixer_parameters()), with_commas(lm.reference_params), with_commas(lm.budget.budget));
  enforce_param_budget(lm.budget, lm.total_params, mixer.descriptor.name);
  std::vector<std::shared_ptr<lra::Mixer>> mixers;
  for (const auto& block : lm.model->blocks()) mixers.push_back(block->mixer);
  lm.groups = optimizer_groups(*lm.model, mixers, mixer.descriptor.abi_minor, mixer.descriptor.name, manifest.train);
  log_hinted_groups(lm.groups, log);
  log.info("{}", enforce_conformance(mixer.descriptor.name,
                                     check_conformance(mixer.descriptor.capabilities, make_mixer, mixer_specs,
                                                       {1, static_cast<uint64_t>(manifest.train.seed), true,
                                                        lm.spec.rotary_base, pick_device(a.device).str()})));
  return lm;
}

// The live 'causal' checks (plugins/conformance.h, docs/forgetting.md#live-conformance-checks).
// Half of the measured batches: the measurement is ~1% of an official run's
// compute, so checking half of it costs little and a leak that lasts a few
// batches is caught. Tolerances relative to the logits' scale.
constexpr double kMeasureSpotCheckProbability = 0.5;
constexpr double kFloat32Tolerance = 1e-4, kBf16Tolerance = 3e-2;

LiveCausalOptions spot_check_options(const PluginForget& p, const char* phase, double probability,
                                     const std::vector<int32_t>& text, bool bf16) {
  LiveCausalOptions o;
  o.plugin = p.mixer->descriptor.name;
  o.phase = phase;
  o.probability = probability;
  o.relative_tolerance = bf16 ? kBf16Tolerance : kFloat32Tolerance;
  o.text = &text;
  return o;
}

nlohmann::json spot_check_json(const LiveCausalCheck& c) {
  const LiveCausalStats& s = c.stats();
  return {{"probability", c.options().probability},
          {"calls", s.calls},
          {"checks", s.checks},
          {"relative_tolerance", c.options().relative_tolerance},
          {"max_difference_over_tolerance", s.max_ratio},
          {"seconds", s.seconds}};
}

// What forgetting.json's "model" says of the trained plugin LM.
nlohmann::json plugin_model_json(const PluginForget& p, const PluginLM& lm, const LmTrainResult& tr) {
  const LoadedPlugin& mixer = *p.mixer;
  nlohmann::json plugin = {{"name", mixer.descriptor.name}, {"version", mixer.descriptor.version},
                           {"file", mixer.descriptor.file.string()}, {"sha256", mixer.sha256},
                           {"options", params_json(p.mixer_options)}};
  if (!mixer.source.is_null()) plugin["source"] = mixer.source;  // a Python mixer's files
  return {{"kind", "plugin"},
          {"plugin", plugin},
          {"params", {{"total", lm.total_params}, {"mixer", lm.model->mixer_parameters()},
                      {"reference", lm.reference_params}, {"budget", lm.budget.budget}}},
          {"positions", lm.spec.positions},  // "rotary" inside the mixers, else model.positions_without_rotary
          {"manifest", p.manifest.source},
          {"manifest_sha256", p.choices.manifest_sha256},
          {"manifest_release", p.release ? nlohmann::json(p.release->version) : nlohmann::json(nullptr)},
          {"overrides", p.overrides},
          {"config", to_json(p.manifest)},
          {"optimizer", optimizer_record(lm.groups, p.manifest.train.weight_decay)},
          {"training", {{"final_train_loss", tr.final_train_loss},
                        {"test_loss", tr.test_loss},
                        {"test_bits_per_byte", tr.test_loss / std::log(2.0)},
                        {"test_tokens", tr.test_tokens},
                        {"history", tr.history}}}};
}

nlohmann::json plugin_timing_json(const PluginForget& p, const LmTrainResult& tr, double measure_s,
                                  const torch::Device& device) {
  return {{"wall_seconds", seconds_since(p.started)},
          {"train_seconds", tr.train_seconds},
          {"steps_per_second", tr.steps_per_second},
          {"tokens_per_second", tr.tokens_per_second},
          {"measure_seconds", measure_s},
          {"peak_memory_bytes", peak_rss_bytes()},
          {"peak_memory_kind", "process peak RSS"},
          {"device", device.str()}};
}

// The output directory with its run.log, which errors and crashes end too.
fs::path open_plugin_out(const ForgetArgs& a, spdlog::logger& log) {
  const fs::path out = prepare_out(a.out);
  fs::create_directories(out);
  log.sinks().push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((out / "run.log").string(), true));
  plugin_calls::set_log_file((out / "run.log").string());
  return out;
}

}  // namespace

PluginForget plan_plugin_forget(const ForgetArgs& a) {
  PluginForget p;
  p.started = Clock::now();
  p.mixer = &open_plugin(*a.plugin, LRA_KIND_MIXER);
  const Descriptor& d = p.mixer->descriptor;
  if (!(d.capabilities & LRA_CAP_CAUSAL))
    throw Error(ErrorKind::plugin, "plugin '" + d.name + "' cannot be the mixer of a causal LM: the "
                                       "forgetting curve needs LRA_CAP_CAUSAL (position i reads only positions <= i); "
                                       "it declares " +
                                       nlohmann::json(capability_names(d.capabilities)).dump());
  p.manifest = a.manifest ? load_manifest_file(*a.manifest) : load_preset(kForgettingTask, a.preset);
  if (p.manifest.task != kForgettingTask)
    throw Error(ErrorKind::rules, p.manifest.source + ": manifest is for task '" + p.manifest.task +
                                      "', not 'forgetting' (lrahost forget takes forgetting manifests: "
                                      "manifests/forgetting-v1/ or manifests/smoke/forgetting.toml)");
  const auto mixer_sets = apply_sets(a.sets, p.manifest, &p.overrides);
  p.mixer_options = resolve_mixer_options(*p.mixer, mixer_sets);
  p.settings = measure_settings(p.manifest);
  p.measure = measure_config(a, p.settings, kByteBos, kByteEos);
  p.manifest_label = a.manifest ? "manifest " + p.manifest.source : "preset '" + a.preset + "'";
  return p;
}

ForgetOutcome forget_plugin(const ForgetArgs& a, const PluginForget& p, spdlog::logger& log) {
  const RunDivision division = plugin_division(a, p);
  const LmStreams streams = plugin_streams(a, p, log);
  PluginLM lm = build_plugin_lm(a, p, log);
  ForgetOutcome r;
  r.out = open_plugin_out(a, log);
  const torch::Device device = pick_device(a.device);
  const bool bf16 = device.is_cuda() && !a.fp32;
  log.info("lrahost {} — forgetting curve of {} ({} division), device {}{}, out {}", build_info().version,
           p.mixer->descriptor.name, division.name, device.str(), bf16 ? " (bf16 autocast)" : "", r.out.string());
  for (const auto& reason : division.reasons) log.info("open division: {}", reason);

  LmTrainOptions topts;
  topts.train = p.manifest.train;
  topts.seq_len = p.manifest.model.max_len;
  topts.device = device;
  topts.bf16 = bf16;
  topts.groups = lm.groups;
  topts.live_progress = isatty(STDERR_FILENO);
  LiveCausalCheck train_check(
      spot_check_options(p, "during training", kTrainingSpotCheckProbability, streams.train, bf16));
  topts.spot_check = &train_check;
  const LmTrainResult tr = train_causal_lm(lm.model, streams.train, streams.held_out, topts, log);
  log.info("live causal checks during training: {} of {} steps checked, passed (largest difference {:.3g} of the "
           "tolerance; {:.2f} s, {:.1f}% of the training time)",
           train_check.stats().checks, train_check.stats().calls, train_check.stats().max_ratio,
           train_check.stats().seconds, 100.0 * train_check.stats().seconds / std::max(tr.train_seconds, 1e-9));
  save_module(*lm.model, r.out / "model.pt");

  lm.model->eval();
  const auto t0 = Clock::now();
  LiveCausalCheck measure_check(
      spot_check_options(p, "during the measurement", kMeasureSpotCheckProbability, streams.test, bf16));
  int64_t batch = 0;
  try {
    r.curve = measure_curve(
        [&](const at::Tensor& ids) {
          torch::NoGradGuard no_grad;
          CudaBf16Autocast autocast(bf16);
          const auto x = ids.to(device);
          const TokenModel logits = [&](const at::Tensor& in) { return lm.model->forward(in); };
          ++batch;
          return (measure_check.due() ? measure_check.run(logits, x, "at batch " + std::to_string(batch)) : logits(x))
              .argmax(-1)
              .to(at::kCPU);
        },
        streams.test, p.measure, [&](const CurvePoint& pt, size_t i, size_t n) { log_point(log, pt, i, n); });
  } catch (const ConformanceFailure&) {
    // The model broke its promise: nothing of it is kept (run.log says why).
    std::error_code ec;
    fs::remove(r.out / "model.pt", ec);
    throw;
  }
  log.info("live causal checks during the measurement: {} of {} batches checked, passed (largest difference {:.3g} "
           "of the tolerance; {:.2f} s)",
           measure_check.stats().checks, measure_check.stats().calls, measure_check.stats().max_ratio,
           measure_check.stats().seconds);
  const double measure_s = seconds_since(t0);
  r.curve.label = p.mixer->descriptor.name;
  r.curve.train_length = p.manifest.model.max_len;

  nlohmann::json doc = {
      {"schema", kForgettingSchema},
      {"label", r.curve.label},
      {"division", division.name},
      {"division_reasons", division.reasons},
      {"configuration", config_json(p.measure, r.curve.train_length, bf16 ? "bfloat16 autocast" : "float32")},
      {"corpus", trained_corpus_json(streams.corpus, static_cast<int64_t>(streams.train.size()),
                                     static_cast<int64_t>(streams.held_out.size()))},
      {"model", plugin_model_json(p, lm, tr)},
      {"host", host_json()},
      {"system", system_info()},
      {"timing", plugin_timing_json(p, tr, measure_s, device)},
      // The live causal checks that passed (their schedule is secret, so not recorded).
      {"conformance", {{"live_causal", {{"training", spot_check_json(train_check)},
                                        {"measurement", spot_check_json(measure_check)}}}}},
      {"command_line", a.command_line},
      {"finished_at", utc_now()},
  };
  write_forgetting(r.out, r.curve, std::move(doc), a.log_x);
  r.held_out_loss = tr.test_loss;
  r.steps = tr.steps;
  return r;
}

}  // namespace lra::host::forgetting
