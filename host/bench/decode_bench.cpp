// bench/decode_bench.cpp — see decode_bench.h.
#include "bench/decode_bench.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/out_of_memory.h"
#include "common/text.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "lra/abi.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/backbone.h"
#include "model/causal_lm.h"
#include "plugins/conformance.h"
#include "plugins/decode_check.h"
#include "plugins/descriptor.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "plugins/state_size.h"
#include "results/system_info.h"

namespace lra::host::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct DecodeSettings {
  ModelConfig model;  // the causal LM's (forgetting manifest)
  std::string source;
  int64_t batch = 1, tokens = 8;
  uint64_t seed = 0;
  c10::Device device{c10::kCPU};
};

// Rotary positions inside the mixers that take them, as the causal LM places them.
double rotary_base_for(const LoadedPlugin& p, const ModelConfig& m) {
  return (p.descriptor.capabilities & LRA_CAP_ROTARY) && m.positions == "rotary" ? CausalLMSpec{}.rotary_base : 0.0;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

DecodePoint measure(const LoadedPlugin& p, const MixerMaker& make, int64_t context, const DecodeSettings& s) {
  DecodePoint pt;
  pt.plugin = p.descriptor.name;
  pt.context = context;
  const auto& m = s.model;
  const double rotary = rotary_base_for(p, m);
  try {
    torch::NoGradGuard no_grad;
    torch::manual_seed(s.seed);
    std::vector<std::shared_ptr<lra::Mixer>> mixers;
    for (int64_t i = 0; i < m.layers; ++i) {
      lra::MixerSpec spec = mixer_spec(m, context + s.tokens + 1, i, s.seed);
      spec.causal = true;
      spec.rotary_base = rotary;
      auto mixer = make(spec);
      mixer->to(s.device);
      mixer->eval();
      mixers.push_back(mixer);
    }
    // Only plugins built for SDK 1.3 or later have the decoding entries in their vtable.
    const bool steps = p.descriptor.abi_minor >= 3 && mixers.front()->decodes();
    pt.mode = steps ? "state" : "recomputed";
    const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(s.device);
    // The first layer's inputs (token embeddings): the warm-up token, then the timed ones.
    const auto x = torch::randn({s.batch, context + 1 + s.tokens, m.d_model}, opts);
    synchronize_device(s.device);
    reset_peak_memory(s.device);
    Clock::time_point t0;
    double timed = 0;  // the timed tokens' wall time
    if (steps) {
      std::vector<std::vector<torch::Tensor>> states;
      for (auto& mx : mixers) states.push_back(mx->decode_start(s.batch, opts));
      // The context through each layer's prefill (SDK 1.6: its parallel form
      // where it has one, checked before any timing; older plugins step).
      const bool has_prefill = p.descriptor.abi_minor >= 6;
      bool parallel = has_prefill;
      for (auto& mx : mixers) parallel = parallel && mx->prefills_in_parallel();
      pt.prefill_mode = parallel ? "parallel" : "token by token";
      t0 = Clock::now();
      auto h = x.narrow(1, 0, context);
      for (size_t i = 0; i < mixers.size(); ++i) {
        if (has_prefill) {
          h = mixers[i]->prefill(h, states[i]);
        } else {
          std::vector<torch::Tensor> rows;
          for (int64_t t = 0; t < context; ++t) rows.push_back(mixers[i]->decode_step(h.select(1, t), states[i], t));
          h = context > 0 ? torch::stack(rows, 1) : h;
        }
      }
      synchronize_device(s.device);
      pt.prefill_s = seconds_since(t0);
      auto step = [&](int64_t t) {
        auto y = x.select(1, t);
        for (size_t i = 0; i < mixers.size(); ++i) y = mixers[i]->decode_step(y, states[i], t);
        return y;
      };
      step(context);  // warm-up
      synchronize_device(s.device);
      t0 = Clock::now();
      for (int64_t t = context + 1; t < context + 1 + s.tokens; ++t) step(t);
      synchronize_device(s.device);
      timed = seconds_since(t0);
      // The state at its fullest over the whole sequence, measured as the
      // recall suites measure it (plugins/state_size.h): a block-local or
      // sliding-window state empties and refills, and its capacity is what a
      // sequence needs, not the phase the last token happens to fall on.
      const StateMeasurement state =
          measure_state_size(mixers, {context + 1 + s.tokens}, m.d_model, s.device, s.seed);
      if (state.sizes.empty()) throw Error(ErrorKind::plugin, "state not measured: " + state.why_not);
      pt.bytes_per_sequence = state.sizes.front().bytes;
    } else {
      // The whole causal forward over the context and the new token, its last row kept.
      auto token = [&](int64_t t) {
        auto h = x.narrow(1, 0, t + 1);
        for (auto& mx : mixers) h = mx->forward(h, torch::Tensor());
        return h.select(1, t);
      };
      token(context);  // warm-up
      synchronize_device(s.device);
      t0 = Clock::now();
      for (int64_t t = context + 1; t < context + 1 + s.tokens; ++t) token(t);
      synchronize_device(s.device);
      timed = seconds_since(t0);
      // What must persist to recompute: the context's inputs to the first layer.
      pt.bytes_per_sequence = (context + 1 + s.tokens) * m.d_model * static_cast<int64_t>(sizeof(float));
    }
    pt.ms_per_token = 1e3 * timed / static_cast<double>(s.tokens);
    pt.tokens_per_s = static_cast<double>(s.batch * s.tokens) / timed;
    pt.peak_memory_bytes = peak_memory_bytes(s.device);
  } catch (const std::exception& e) {
    pt.mode = is_out_of_memory(e) ? "oom" : "error";
    pt.error = text::first_line(e.what());
  }
  release_cached_memory(s.device);
  return pt;
}

std::string markdown(const std::vector<DecodePoint>& points, const DecodeSettings& s) {
  std::string md = "### Decoding (one token at a time after a context)\n\n"
                   "| plugin | how | context | tokens/s | ms per token | memory per sequence | prefill |\n"
                   "|---|---|---:|---:|---:|---:|---:|\n";
  for (const auto& p : points) {
    if (p.mode != "state" && p.mode != "recomputed") {
      md += fmt::format("| {} | {} | {} | — | — | — | — |\n", p.plugin,
                        p.mode == "not causal" ? "not causal: cannot decode" : p.mode + ": " + p.error, p.context);
      continue;
    }
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.2f} | {} | {} |\n", p.plugin,
                      p.mode == "state" ? "its state" : "recomputed", p.context, p.tokens_per_s, p.ms_per_token,
                      text::bytes_text(p.bytes_per_sequence),
                      p.mode == "state" ? fmt::format("{:.2f} s ({})", p.prefill_s, p.prefill_mode) : "—");
  }
  md += fmt::format(
      "\n{}; float32; batch {}; {} timed tokens after one untimed; the causal LM's {} layers (d_model {}, {} heads). "
      "Per token: every layer's mixer; embeddings, feed-forward layers, norms and the LM head are left out (the "
      "same for every mixer). Memory per sequence: the decoding state the mixer keeps (its state), or the "
      "context's inputs that recomputation must keep (recomputed), at its fullest over the sequence. Prefill: the "
      "context through every layer before the first token, in one call per layer where the mixer has a parallel "
      "form (SDK 1.6 prefill), else one step per position.\n",
      describe_device(s.device), s.batch, s.tokens, s.model.layers, s.model.d_model, s.model.heads);
  return md;
}

nlohmann::json points_json(const std::vector<DecodePoint>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json j = {{"plugin", p.plugin}, {"context", p.context}, {"mode", p.mode}};
    if (p.mode == "state" || p.mode == "recomputed") {
      j["tokens_per_s"] = p.tokens_per_s;
      j["ms_per_token"] = p.ms_per_token;
      j["bytes_per_sequence"] = p.bytes_per_sequence;
      j["peak_memory_bytes"] = p.peak_memory_bytes;
      if (p.mode == "state") {
        j["prefill_s"] = p.prefill_s;
        j["prefill_mode"] = p.prefill_mode;
      }
    }
    if (!p.error.empty()) j["error"] = p.error;
    out.push_back(j);
  }
  return out;
}

}  // namespace

BenchOutcome run_decode_bench(const BenchArgs& a, spdlog::logger& log) {
  const std::vector<std::string> plugins = bench_plugin_names(a.plugins);
  const std::vector<int64_t> contexts = parse_lengths(a.lengths);
  if (plugins.empty() || contexts.empty()) throw Error(ErrorKind::usage, "--plugins and --lengths must name at least one value");
  if (a.batch < 1 || a.tokens < 1) throw Error(ErrorKind::usage, "--batch and --tokens must be >= 1");
  std::vector<const LoadedPlugin*> loaded;
  for (const auto& p : plugins) loaded.push_back(&open_plugin(p, LRA_KIND_MIXER));

  const Manifest lm = load_preset(kForgettingTask, "official");
  DecodeSettings s;
  s.model = lm.model;
  s.source = lm.source;
  s.batch = a.batch;
  s.tokens = a.tokens;
  s.device = pick_device(a.device);
  // Before anything is timed or written: a mixer's steps must give its causal
  // forward's outputs (plugins/decode_check.h), or no number is published.
  for (const LoadedPlugin* p : loaded) {
    if (!(p->descriptor.capabilities & LRA_CAP_CAUSAL) || p->descriptor.abi_minor < 3) continue;
    lra::MixerSpec spec = mixer_spec(s.model, kDecodeParityPositions, 0, s.seed);
    spec.rotary_base = rotary_base_for(*p, s.model);
    const GeneratorStates keep;
    const auto c = enforce_decode_parity(p->descriptor.name, plugin_mixer_factory(*p, resolve_mixer_options(*p, {})),
                                         spec, s.device, s.seed, 2, /*has_prefill=*/p->descriptor.abi_minor >= 6);
    keep.rewind();
    if (c.status == "passed") log.info("{}: decode check passed: {}", p->descriptor.name, c.detail);
  }
  const fs::path out = fresh_bench_out(a.out, "decode.json");
  log.info("bench --decode: {} plugins x {} contexts, batch {}, {} timed tokens, {} layers of the causal LM, {}",
           loaded.size(), contexts.size(), s.batch, s.tokens, s.model.layers, describe_device(s.device));
  std::vector<DecodePoint> points;
  const auto start = Clock::now();
  const std::size_t total = loaded.size() * contexts.size();
  for (const LoadedPlugin* p : loaded) {
    if (!(p->descriptor.capabilities & LRA_CAP_CAUSAL)) {
      log.warn("{}: not causal (no LRA_CAP_CAUSAL), so it cannot generate; skipped", p->descriptor.name);
      for (int64_t c : contexts) points.push_back({p->descriptor.name, c, "not causal"});
      continue;
    }
    const auto make = plugin_mixer_factory(*p, resolve_mixer_options(*p, {}));
    for (int64_t c : contexts) {
      log.info("{} decoding {} after {} tokens", text::progress_note(points.size(), total, seconds_since(start)),
               p->descriptor.name, c);
      auto pt = measure(*p, make, c, s);
      if (pt.mode == "state" || pt.mode == "recomputed")
        log.info("{:<20} context {:<6} {:>10}: {:9.1f} tokens/s  {:8.2f} ms/token  {} per sequence", pt.plugin, c,
                 pt.mode, pt.tokens_per_s, pt.ms_per_token, text::bytes_text(pt.bytes_per_sequence));
      else
        log.warn("{:<20} context {:<6} {}: {}", pt.plugin, c, pt.mode, pt.error);
      points.push_back(std::move(pt));
    }
  }
  nlohmann::json doc = {
      {"schema", "lrahost.bench-decode/v1"},
      {"results", points_json(points)},
      {"protocol",
       {{"model", s.source},
        {"layers", s.model.layers},
        {"d_model", s.model.d_model},
        {"heads", s.model.heads},
        {"batch", s.batch},
        {"timed_tokens", s.tokens},
        {"dtype", "float32"},
        {"per_token", "one token through every layer's mixer (embeddings, feed-forward layers, norms, LM head left out)"},
        {"state", "the mixer's own decoding state (lra/mixer.h decode_step, SDK ABI 1.3); its steps gave the causal "
                  "forward's outputs first (the decode check, plugins/decode_check.h)"},
        {"recomputed", "the causal forward over the whole context and the token, for every token"},
        {"prefill", "the context through every layer first: parallel (lra/mixer.h prefill, SDK ABI 1.6, checked "
                    "against the steps by the decode check) or token by token"},
        {"bytes_per_sequence", "state: the decoding state's tensors; recomputed: the context's first-layer inputs"}}},
      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                {"torch_version", host_descriptor().torch_version}}},
      {"system", system_info()},
      {"finished_at", utc_now()},
  };
  BenchOutcome r{out, markdown(points, s)};
  write_files_atomic(out, {{"decode.json", doc.dump(2) + "\n"}, {"decode.md", r.markdown}});
  return r;
}

}  // namespace lra::host::bench
