#include "plugins/state_size.h"

#include <algorithm>
#include <set>

#include <torch/nn/module.h>

#include "model/random_state.h"
#include "model/short_conv.h"
#include "plugins/decode_check.h"

namespace lra::host {

int64_t state_bytes(const std::vector<std::vector<torch::Tensor>>& states) {
  int64_t n = 0;
  for (const auto& s : states)
    for (const auto& t : s)
      if (t.defined()) n += static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
  return n;
}

StateMeasurement measure_state_size(const std::vector<std::shared_ptr<lra::Mixer>>& mixers,
                                    const std::vector<int64_t>& lengths, int64_t d_model, const torch::Device& device,
                                    uint64_t seed) {
  StateMeasurement out;
  if (mixers.empty()) return out;
  const PreservedRandomState keep;  // the run's random stream is left as it was
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  std::vector<bool> training;
  for (auto& m : mixers) {
    training.push_back(m->is_training());
    m->eval();
  }
  const auto restore = [&] {
    for (size_t i = 0; i < mixers.size(); ++i) mixers[i]->train(training[i]);
  };
  // The steps measured must be the model's: each block's against its own forward first.
  for (size_t i = 0; i < mixers.size(); ++i) {
    const ConformanceCheck steps = check_decode_steps(*mixers[i], d_model, static_cast<int64_t>(i), device, seed);
    if (steps.status != "passed") {
      out.why_not = "block " + std::to_string(i) + "'s mixer: " + steps.detail + "; a state that does not reproduce "
                    "the forward is not counted";
      restore();
      return out;
    }
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  for (const int64_t length : lengths) {
    std::vector<std::vector<torch::Tensor>> states;
    for (auto& m : mixers) states.push_back(m->decode_start(1, opts));
    int64_t most = 0;
    for (int64_t t = 0; t < length; ++t) {
      auto h = torch::randn({1, d_model}).to(device);  // drawn on the CPU generator, preserved
      for (size_t i = 0; i < mixers.size(); ++i) h = mixers[i]->decode_step(h, states[i], t);
      most = std::max(most, state_bytes(states));
    }
    out.sizes.push_back({length, most});
  }
  restore();
  return out;
}

std::vector<int64_t> state_lengths(const lra::Split& test, int64_t max_len) {
  std::set<int64_t> distinct;
  for (size_t i = 0; i + 1 < test.offsets.size(); ++i)
    distinct.insert(std::min(test.offsets[i + 1] - test.offsets[i], max_len));
  std::vector<int64_t> all(distinct.begin(), distinct.end()), lengths;
  constexpr size_t kMaxLengths = 8;
  if (all.size() <= kMaxLengths) return all;
  for (size_t k = 0; k < kMaxLengths; ++k) lengths.push_back(all[(all.size() - 1) * k / (kMaxLengths - 1)]);
  return lengths;
}

nlohmann::json model_state_size(Classifier& model, const ModelConfig& m, const std::string& mixer_name,
                                uint32_t abi_minor, const std::vector<int64_t>& lengths, const torch::Device& device,
                                uint64_t seed) {
  const auto mixers = model->mixers();
  for (size_t i = 0; i < mixers.size(); ++i)
    if (!is_short_conv_block(m.short_conv, static_cast<int64_t>(i)) && !(abi_minor >= 3 && mixers[i]->decodes()))
      return state_size_json({{}, "'" + mixer_name + "' does not decode token by token (lra::Mixer::decodes() is "
                                  "false, or its plugin was built before SDK 1.3): its state is not measured, and a "
                                  "plot marks it so"});
  return state_size_json(measure_state_size(mixers, lengths, m.d_model, device, seed));
}

nlohmann::json state_size_json(const StateMeasurement& m) {
  if (m.sizes.empty()) return {{"measured", false}, {"why", m.why_not}};
  nlohmann::json per = nlohmann::json::array();
  for (const auto& s : m.sizes) per.push_back({{"length", s.length}, {"bytes", s.bytes}});
  return {{"measured", true},
          {"method", "the bytes of every block's decoding state (lra::Mixer::decode_step, each block's steps first "
                     "checked against its causal forward) at its fullest over L tokens, one sequence, float32"},
          {"per_length", per}};
}

}  // namespace lra::host
