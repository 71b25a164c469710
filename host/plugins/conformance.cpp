#include "plugins/conformance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>

#include "common/plugin_calls.h"
#include "common/text.h"
#include "model/mixer_call.h"
#include "lra/status.h"

namespace lra::host {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kNames[] = {"shape", "finite", "deterministic", "padding_mask", "causal", "attention_probs"};

using text::short_number;

std::string shape_of(const torch::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

// The plugin's forward, reseeded, marked as plugin code; an exception is a plugin fault.
torch::Tensor forward(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, uint64_t seed) {
  torch::manual_seed(seed);
  return guarded_forward(m, x, mask);
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  auto d = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs();
  d = torch::where(torch::isnan(d), torch::full_like(d, INFINITY), d);  // NaN never compares as "equal"
  return d.numel() == 0 ? 0.0 : d.max().item<double>();
}

// Relative to the outputs' scale: float reductions may reorder, reading a
// token that should be invisible changes outputs by far more.
double tolerance(const torch::Tensor& y) {
  auto finite = torch::where(torch::isfinite(y), y.abs(), torch::zeros_like(y));
  return 1e-5 * std::max(1.0, finite.numel() ? finite.max().item<double>() : 1.0);
}

struct Checks {
  std::map<std::string, ConformanceCheck> by_name;
  ConformanceCheck& operator[](const std::string& n) {
    auto& c = by_name[n];
    c.name = n;
    return c;
  }
  void fail(const std::string& n, double diff, double tol, const std::string& detail) {
    auto& c = (*this)[n];
    if (c.status == "failed") return;  // the first layer that fails is the one reported
    c.status = "failed";
    c.difference = diff;
    c.tolerance = tol;
    c.detail = detail;
  }
  void pass(const std::string& n, double diff, double tol) {
    auto& c = (*this)[n];
    if (c.status == "failed") return;
    c.status = "passed";
    c.difference = std::max(c.difference, diff);
    c.tolerance = c.tolerance > 0 ? std::min(c.tolerance, tol) : tol;
  }
};

// Restores LibTorch's generators (the checks reseed them all) when the
// checks end, however they end.
class GeneratorGuard {
 public:
  ~GeneratorGuard() {
    saved_.rewind();
    plugin_calls::set_phase(nullptr, 0);
  }

 private:
  GeneratorStates saved_;
};

bool same_spec(const lra::MixerSpec& a, const lra::MixerSpec& b) {
  return a.d_model == b.d_model && a.heads == b.heads && a.qkv_dim == b.qkv_dim && a.max_len == b.max_len &&
         a.causal == b.causal && a.layer_index == b.layer_index && a.rotary_base == b.rotary_base;
}

std::string layer_text(const lra::MixerSpec& s) { return "layer " + std::to_string(s.layer_index); }

}  // namespace

uint32_t capability_checked_by(const std::string& check) {
  if (check == "padding_mask") return LRA_CAP_PADDING_MASK;
  if (check == "causal") return LRA_CAP_CAUSAL;
  if (check == "attention_probs") return LRA_CAP_ATTENTION_PROBS;
  return 0;
}

std::vector<at::Generator> GeneratorStates::generators() {
  std::vector<at::Generator> out{at::detail::getDefaultCPUGenerator()};
  const int64_t gpus = at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0;
  for (int64_t i = 0; i < gpus; ++i)
    out.push_back(at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))));
  return out;
}

GeneratorStates::GeneratorStates() {
  for (auto& gen : generators()) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    states_.push_back(gen.get_state());
  }
}

void GeneratorStates::rewind() const {
  auto gens = generators();
  for (size_t i = 0; i < gens.size() && i < states_.size(); ++i) {
    std::lock_guard<std::mutex> lock(gens[i].mutex());
    gens[i].set_state(states_[i]);
  }
}

std::vector<ConformanceCheck> check_conformance(uint32_t caps, const MixerMaker& make,
                                                const std::vector<lra::MixerSpec>& all_specs,
                                                const ConformanceOptions& o) {
  GeneratorGuard restore;
  plugin_calls::set_phase("conformance check", 0);
  torch::NoGradGuard no_grad;
  Checks checks;
  for (const char* n : kNames) checks[n];
  const bool declares_causal = caps & LRA_CAP_CAUSAL, declares_padding = caps & LRA_CAP_PADDING_MASK,
             declares_probs = caps & LRA_CAP_ATTENTION_PROBS;
  if (!declares_padding) checks["padding_mask"].detail = "not declared";
  if (o.causal_model) checks["padding_mask"].detail = "not used: the causal LM never pads";
  if (!declares_causal) checks["causal"].detail = "not declared";
  if (!declares_probs) checks["attention_probs"].detail = "not declared";

  std::vector<lra::MixerSpec> specs;
  for (const auto& s : all_specs)
    if (std::none_of(specs.begin(), specs.end(), [&](const lra::MixerSpec& t) { return same_spec(s, t); }))
      specs.push_back(s);

  auto timed = [&](const std::string& name, auto&& fn) {
    const auto t0 = Clock::now();
    fn();
    checks[name].seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  };

  uint64_t seed = o.seed * 1000003u + 17;
  for (const auto& spec : specs) {
    const int64_t L = spec.max_len, D = spec.d_model;
    const int64_t B = L > 4096 ? 1 : std::max<int64_t>(1, o.batch);
    const torch::Device dev(o.device);
    const std::string where = layer_text(spec) + ", input [" + std::to_string(B) + ", " + std::to_string(L) + ", " +
                              std::to_string(D) + "]";
    torch::manual_seed(seed++);
    std::shared_ptr<lra::Mixer> m = make(spec);
    m->to(dev);
    m->eval();
    // The last example keeps its first half real, the rest is padding (as a
    // task batch pads); the causal LM never pads.
    const int64_t real = std::max<int64_t>(1, L / 2);
    const auto x = torch::randn({B, L, D}).to(dev);
    torch::Tensor mask;
    if (!o.causal_model) {
      mask = torch::ones({B, L}, torch::TensorOptions().dtype(torch::kBool).device(dev));
      mask[B - 1].narrow(0, real, L - real).fill_(false);
    }
    torch::Tensor y;
    bool shape_ok = false;
    timed("shape", [&] {
      y = forward(*m, x, mask, seed);
      shape_ok = y.defined() && y.sizes() == x.sizes();
      if (shape_ok)
        checks.pass("shape", 0, 0);
      else
        checks.fail("shape", 0, 0,
                    "returned " + shape_of(y) + " for input " + shape_of(x) + " (" + layer_text(spec) +
                        "); a mixer must map [B, L, D] to [B, L, D]");
    });
    if (!shape_ok) break;
    timed("finite", [&] {
      const auto bad = torch::logical_not(torch::isfinite(y));
      const int64_t n = bad.sum().item<int64_t>();
      if (n == 0) return checks.pass("finite", 0, 0);
      const auto first = bad.nonzero()[0];
      checks.fail("finite", static_cast<double>(n), 0,
                  std::to_string(n) + " of " + std::to_string(y.numel()) +
                      " outputs are NaN or infinite (first at example " + std::to_string(first[0].item<int64_t>()) +
                      ", position " + std::to_string(first[1].item<int64_t>()) + "; " + where +
                      ", random normal inputs)");
    });
    const double tol = tolerance(y);
    timed("deterministic", [&] {
      const auto y2 = forward(*m, x, mask, seed);
      const double d = max_abs_diff(y, y2);
      if (d <= tol) return checks.pass("deterministic", d, tol);
      checks.fail("deterministic", d, tol,
                  "two evaluation-mode calls on the same input, with LibTorch's generator reseeded to the same "
                  "state, differ by up to " + short_number(d) + " (tolerance " + short_number(tol) + "; " + where +
                      "): the output depends on something that changes between calls");
    });
    if (declares_padding && !o.causal_model) {
      timed("padding_mask", [&] {
        auto x2 = x.clone();
        x2[B - 1].narrow(0, real, L - real).copy_(torch::randn({L - real, D}).to(dev) * 3.0);
        const auto y2 = forward(*m, x2, mask, seed);
        const double d = max_abs_diff(y.narrow(1, 0, real), y2.narrow(1, 0, real));
        if (d <= tol) return checks.pass("padding_mask", d, tol);
        checks.fail("padding_mask", d, tol,
                    "outputs at the " + std::to_string(real) + " real positions of a padded example changed by up to " +
                        short_number(d) + " (tolerance " + short_number(tol) + "; " + where +
                        ") when only the inputs at its padded positions changed: the mixer reads padding; apply the "
                        "mask (true = real token) or do not declare LRA_CAP_PADDING_MASK");
      });
    }
    if (declares_probs) {
      timed("attention_probs", [&] {
        m->set_record_attention(true);
        forward(*m, x, mask, seed);
        const auto p = m->last_attention();
        m->set_record_attention(false);
        const std::vector<int64_t> want = {B, spec.heads, L, L};
        const std::string want_text = "[B, heads, L, L] = [" + std::to_string(B) + ", " + std::to_string(spec.heads) +
                                      ", " + std::to_string(L) + ", " + std::to_string(L) + "]";
        if (!p.defined() || p.sizes() != torch::IntArrayRef(want)) {
          checks.fail("attention_probs", 0, 0,
                      "after a forward with recording on, last_attention() is " + shape_of(p) + ", expected " +
                          want_text + " (" + layer_text(spec) +
                          "); record them when record_attention_ is set or do not declare LRA_CAP_ATTENTION_PROBS");
          return;
        }
        const int64_t n = torch::logical_not(torch::isfinite(p)).sum().item<int64_t>();
        if (n > 0)
          return checks.fail("attention_probs", static_cast<double>(n), 0,
                             std::to_string(n) + " recorded attention probabilities are NaN or infinite (" +
                                 layer_text(spec) + ")");
        checks.pass("attention_probs", 0, 0);
      });
    }
    if (declares_causal) {
      timed("causal", [&] {
        std::shared_ptr<lra::Mixer> mc = m;
        if (!spec.causal) {
          lra::MixerSpec cs = spec;
          cs.causal = true;
          if (caps & LRA_CAP_ROTARY) cs.rotary_base = o.rotary_base;
          torch::manual_seed(seed);
          // Options chosen for a bidirectional run may rule causal mode out
          // (reformer's attend_across_buckets): the causal promise is then
          // checked when the mixer runs causally (forget), not here.
          try {
            mc = make(cs);
          } catch (const lra::Error& e) {
            if (e.kind() == ErrorKind::memory) throw;  // out of memory is no refusal of causal mode
            if (checks.by_name["causal"].status != "failed") {
              checks["causal"].status = "skipped";
              checks["causal"].detail = std::string("not checked: the mixer refuses causal mode with this run's options (") +
                                        e.what() + "); checked when it runs causally";
            }
            return;
          }
          mc->to(dev);
          mc->eval();
        }
        const int64_t t = (L - 1) / 2;  // positions 0..t must not see t+1..L-1
        const auto xc = torch::randn({B, L, D}).to(dev);
        auto xc2 = xc.clone();
        xc2.narrow(1, t + 1, L - t - 1).copy_(torch::randn({B, L - t - 1, D}).to(dev) * 3.0);
        const auto yc = forward(*mc, xc, torch::Tensor(), seed);
        const auto yc2 = forward(*mc, xc2, torch::Tensor(), seed);
        if (!yc.defined() || yc.sizes() != xc.sizes())
          return checks.fail("causal", 0, 0,
                             "in causal mode the mixer returned " + shape_of(yc) + " for input " + shape_of(xc) + " (" +
                                 layer_text(spec) + ")");
        const double ctol = tolerance(yc);
        const double d = max_abs_diff(yc.narrow(1, 0, t + 1), yc2.narrow(1, 0, t + 1));
        if (d <= ctol) return checks.pass("causal", d, ctol);
        checks.fail("causal", d, ctol,
                    "in causal mode, outputs at positions 0.." + std::to_string(t) + " changed by up to " + short_number(d) +
                        " (tolerance " + short_number(ctol) + "; " + where + ") when only the inputs after position " +
                        std::to_string(t) + " changed: the mixer reads later tokens; honour spec.causal or do not "
                        "declare LRA_CAP_CAUSAL");
      });
    }
  }
  // The causal check tests the declared capability even where this model runs bidirectionally: say so.
  if (!o.causal_model && checks.by_name["causal"].status == "passed")
    checks["causal"].detail =
        "in the mixer's declared causal mode (spec.causal = true, as forget and bench --decode create it); a "
        "classifier creates it with spec.causal = false, and the summary probe decides where its head reads";
  std::vector<ConformanceCheck> out;
  for (const char* n : kNames) out.push_back(checks.by_name[n]);
  return out;
}

std::string enforce_conformance(const std::string& plugin, const std::vector<ConformanceCheck>& checks) {
  std::string summary;
  double seconds = 0;
  for (const auto& c : checks) {
    if (c.status == "failed")
      throw Error(ErrorKind::plugin, "plugin '" + plugin + "' failed the conformance check '" + c.name +
                                         "': " + c.detail + " (docs/abi.md#conformance-checks)");
    seconds += c.seconds;
    if (c.status == "passed") summary += (summary.empty() ? "" : ", ") + c.name;
  }
  // What was not checked, and why: a declared capability that could not be
  // checked here, one not used by this model, one not declared; and a check
  // of a mode this model does not use.
  std::string not_checked, not_declared;
  for (const auto& c : checks) {
    if (c.status == "passed" && c.detail.rfind("in the mixer's declared", 0) == 0) not_checked += "; " + c.name + " " + c.detail;
    if (c.status != "skipped") continue;
    if (c.detail == "not declared")
      not_declared += (not_declared.empty() ? "" : ", ") + c.name;
    else
      not_checked += "; " + c.name + " " + c.detail;
  }
  if (!not_declared.empty()) not_checked += "; not declared, so not checked: " + not_declared;
  char b[64];
  std::snprintf(b, sizeof b, " (%.2f s)", seconds);
  return "conformance checks passed: " + (summary.empty() ? std::string("none") : summary) + b + not_checked;
}

namespace {

uint64_t secret_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

LiveCausalCheck::LiveCausalCheck(LiveCausalOptions o) : o_(std::move(o)), rng_(secret_seed()) {}

bool LiveCausalCheck::due() {
  ++stats_.calls;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < o_.probability;
}

at::Tensor LiveCausalCheck::run(const TokenModel& model, const at::Tensor& ids, const std::string& where) {
  const auto t0 = Clock::now();
  const int64_t B = ids.size(0), T = ids.size(1);
  if (T < 2) return model(ids);  // no later token to change
  // Each example i keeps positions 0..t_i; the rest comes from a random
  // window of the text (or random bytes), and position t_i + 1 always differs.
  auto cpu = ids.to(at::kCPU, at::kLong).contiguous();
  auto perturbed = cpu.clone();
  std::vector<int64_t> keep(static_cast<size_t>(B));
  const bool from_text = o_.text && static_cast<int64_t>(o_.text->size()) >= T;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t t = std::uniform_int_distribution<int64_t>(0, T - 2)(rng_);
    keep[static_cast<size_t>(i)] = t;
    int64_t* row = perturbed[i].data_ptr<int64_t>();
    const int64_t* orig = cpu[i].data_ptr<int64_t>();
    const int64_t n = T - t - 1;
    const int64_t off =
        from_text ? std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(o_.text->size()) - n)(rng_) : 0;
    for (int64_t j = 0; j < n; ++j)
      row[t + 1 + j] = from_text ? (*o_.text)[static_cast<size_t>(off + j)]
                                 : std::uniform_int_distribution<int64_t>(0, 255)(rng_);
    if (row[t + 1] == orig[t + 1]) row[t + 1] = orig[t + 1] ^ 1;  // 256 (bos) <-> 257 (eos), bytes stay bytes
  }
  const GeneratorStates saved;
  const auto y_perturbed = model(perturbed.to(ids.device()));
  saved.rewind();
  auto y = model(ids);
  if (!y.defined() || !y_perturbed.defined() || y.dim() < 2 || y.size(0) != B || y.size(1) != T ||
      y_perturbed.sizes() != y.sizes())
    throw ConformanceFailure("plugin '" + o_.plugin + "' failed the conformance check 'causal' " + o_.phase + " " +
                             where + ": the model returned outputs of shape " + shape_of(y) + " and " +
                             shape_of(y_perturbed) + " for input [" + std::to_string(B) + ", " + std::to_string(T) +
                             "] (docs/abi.md#conformance-checks)");
  // |difference| at positions <= t_i of each example; equal values (NaN
  // with NaN included) are no difference, any other NaN is.
  const auto a = y.detach().to(at::kDouble), b = y_perturbed.detach().to(at::kDouble);
  auto d = (a - b).abs();
  d = torch::where(torch::logical_and(torch::isnan(a), torch::isnan(b)), torch::zeros_like(d), d);
  d = torch::where(torch::isnan(d), torch::full_like(d, INFINITY), d);
  d = d.reshape({B, T, -1}).amax(2).to(at::kCPU);  // [B, T]
  std::vector<int64_t> kept(keep.begin(), keep.end());
  const auto scored = torch::arange(T).unsqueeze(0) <= torch::tensor(kept).unsqueeze(1);
  d = torch::where(scored, d, torch::zeros_like(d));
  const double tol = o_.relative_tolerance * std::max(1.0, [&] {
    auto f = torch::where(torch::isfinite(a), a.abs(), torch::zeros_like(a));
    return f.numel() ? f.max().item<double>() : 1.0;
  }());
  const auto flat_at = d.argmax().item<int64_t>();
  const int64_t ex = flat_at / T, pos = flat_at % T;
  const double diff = d.view({-1})[flat_at].item<double>();
  ++stats_.checks;
  stats_.max_ratio = std::max(stats_.max_ratio, diff / tol);
  stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  if (diff > tol)
    throw ConformanceFailure(
        "plugin '" + o_.plugin + "' failed the conformance check 'causal' " + o_.phase + " " + where +
        ": the model's outputs at position " + std::to_string(pos) + " of example " + std::to_string(ex) +
        " changed by " + short_number(diff) + " (tolerance " + short_number(tol) + "; input [" + std::to_string(B) + ", " +
        std::to_string(T) + "]) when only the tokens after position " + std::to_string(keep[static_cast<size_t>(ex)]) +
        " changed: the mixer reads later tokens, though it passed the check before training "
        "(docs/abi.md#conformance-checks)");
  return y;
}

}  // namespace lra::host
