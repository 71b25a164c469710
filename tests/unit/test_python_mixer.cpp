// Python mixers (issue 28), loaded exactly as the host loads them
// (host::load_plugin with FILE.py:CLASS, plugins/python/): the example
// softmax attention against the built-in transformer (outputs in float64,
// probabilities, attention dropout, and 20 training steps of the whole
// backbone), two files named model.py in one process, buffers a forward
// replaces, train/eval and dtype moves reaching Python, and the contract's
// refusals with their messages and error kinds.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <string>

#include <unistd.h>

#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>

#include "lra/attention.h"
#include "lra/dropout.h"
#include "mixer_harness.h"
#include "model/backbone.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "train/module_io.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/softmax_attention.py:SoftmaxAttention";
// The same mixer with its attention computed by the host (lrahost.softmax_attention).
const std::string kHostExample = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/host_attention.py:HostAttention";
std::string fixture(const std::string& spec) { return std::string(LRA_SOURCE_DIR) + "/tests/fixtures/python/" + spec; }

const host::LoadedPlugin& python(const std::string& spec) { return host::load_plugin(spec, LRA_KIND_MIXER); }

std::shared_ptr<lra::Mixer> make_python(const std::string& spec, const lra::MixerSpec& ms,
                                        const std::map<std::string, std::string>& options = {}) {
  const auto& p = python(spec);
  std::shared_ptr<lra::Mixer> m;
  const auto st = p.mixer().create(ms, host::resolve_mixer_options(p, options), &m);
  if (!st.ok()) throw lra::Error(st.kind, st.message);
  m->eval();
  return m;
}

// A file name under the temp folder, removed afterwards.
struct TempPath {
  TempPath() {
    static int n = 0;
    path = fs::temp_directory_path() / ("lra-python-mixer-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  }
  ~TempPath() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  fs::path path;
};

// The error a load raises (kind and message), or kind internal with "" when none.
std::pair<lra::ErrorKind, std::string> load_error(const std::string& spec) {
  try {
    python(spec);
  } catch (const lra::Error& e) {
    return {e.kind(), e.what()};
  }
  return {lra::ErrorKind::internal, ""};
}

// The built-in's parameter name for the Python mirror's ("q.weight" <- "proj.q.weight").
std::string python_name(const std::string& builtin) { return std::regex_replace(builtin, std::regex("proj\\."), ""); }

// Copies every parameter and buffer of `from` into `to` by name (mapped), and
// checks that both have exactly the same names.
void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard g;
  auto dst_params = to.named_parameters();
  auto dst_buffers = to.named_buffers();
  size_t copied = 0;
  for (const auto& p : from.named_parameters()) {
    auto* t = dst_params.find(python_name(p.key()));
    ASSERT_NE(t, nullptr) << p.key();
    t->copy_(p.value());
    ++copied;
  }
  for (const auto& b : from.named_buffers()) {
    auto* t = dst_buffers.find(python_name(b.key()));
    ASSERT_NE(t, nullptr) << b.key();
    t->copy_(b.value());
  }
  EXPECT_EQ(copied, dst_params.size()) << "the Python model has parameters the built-in lacks";
}

// ---- 1. parity with the built-in transformer -------------------------------------

struct Pair {
  std::shared_ptr<lra::Mixer> builtin, py;
};

Pair pair(const lra::MixerSpec& spec, const std::string& example = kExample) {
  Pair p{make_mixer("transformer", spec), make_python(example, spec)};
  copy_state(*p.builtin, *p.py);
  return p;
}

TEST(PythonMixerParity, TheTransformersParametersHaveNoBiasesAndMapOneToOne) {
  auto builtin = make_mixer("transformer", small_spec());
  std::vector<std::string> names;
  for (const auto& p : builtin->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"proj.q.weight", "proj.v.weight", "proj.o.weight", "proj.k.weight"}));
  auto py = make_python(kExample, small_spec());
  std::vector<std::string> py_names;
  for (const auto& p : py->named_parameters()) py_names.push_back(p.key());
  EXPECT_EQ(py_names, (std::vector<std::string>{"q.weight", "k.weight", "v.weight", "o.weight"}));
}

TEST(PythonMixerParity, SoftmaxAttentionEqualsTheTransformerInFloat64WithPaddingMasks) {
  const auto x = random_input(3, 50, 32).to(torch::kFloat64);
  const auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  for (const bool causal : {false, true}) {
    for (const double rotary : {0.0, 10000.0}) {
      auto spec = small_spec(32, 4, 64, causal);
      spec.rotary_base = rotary;
      auto p = pair(spec);
      p.builtin->to(torch::kFloat64);
      p.py->to(torch::kFloat64);
      const auto a = p.builtin->forward(x, mask), b = p.py->forward(x, mask);
      ASSERT_EQ(b.scalar_type(), torch::kFloat64);
      // Every position, padded queries included (uniform rows, LRA's outer-product mask; not when causal).
      EXPECT_LE(max_abs_diff(a, b), 1e-6) << "causal " << causal << ", rotary " << rotary;
      EXPECT_LE(max_abs_diff(p.builtin->forward(x, {}), p.py->forward(x, {})), 1e-6) << "no mask";
    }
  }
}

TEST(PythonMixerParity, AttentionProbabilitiesEqualTheTransformers) {
  auto p = pair(small_spec());
  p.builtin->set_record_attention(true);
  p.py->set_record_attention(true);
  const auto x = random_input(2, 20, 32);
  const auto mask = lengths_mask(20, {20, 10});
  torch::NoGradGuard g;
  p.builtin->forward(x, mask);
  p.py->forward(x, mask);
  ASSERT_TRUE(p.py->last_attention().defined());
  EXPECT_EQ(p.py->last_attention().sizes(), torch::IntArrayRef({2, 4, 20, 20}));
  EXPECT_LE(max_abs_diff(p.builtin->last_attention(), p.py->last_attention()), 1e-6);
}

// lrahost.dropout is the host's dropout: the same masks as the built-in's attention dropout.
TEST(PythonMixerParity, AttentionDropoutInTrainingDrawsTheTransformersMasks) {
  auto spec = small_spec();
  spec.attention_dropout = 0.3;
  auto p = pair(spec);
  p.builtin->train();
  p.py->train();
  const auto x = random_input(2, 24, 32);
  const auto mask = lengths_mask(24, {24, 15});
  torch::NoGradGuard g;
  torch::manual_seed(11);
  const auto a = p.builtin->forward(x, mask);
  torch::manual_seed(11);
  const auto b = p.py->forward(x, mask);
  EXPECT_LE(max_abs_diff(a, b), 1e-6);
  p.py->eval();
  EXPECT_GT(max_abs_diff(p.py->forward(x, mask), b), 1e-3) << "dropout must act in training only";
}

// ---- lrahost.softmax_attention: the SDK's attention for Python mixers -------------

// It is the function the built-in calls, so the outputs, probabilities and
// dropout masks are the built-in's to rounding, forward and backward.
TEST(PythonHostAttention, EqualsTheTransformerInFloat64ForwardAndBackward) {
  const auto mask = lengths_mask(40, {40, 23, 6});
  for (const bool causal : {false, true}) {
    for (const double rotary : {0.0, 10000.0}) {
      for (const bool training : {false, true}) {
        auto spec = small_spec(32, 4, 64, causal);
        spec.rotary_base = rotary;
        spec.attention_dropout = 0.25;
        auto p = pair(spec, kHostExample);
        p.builtin->to(torch::kFloat64);
        p.py->to(torch::kFloat64);
        p.builtin->train(training);
        p.py->train(training);
        const std::string where = std::string("causal ") + (causal ? "on" : "off") + ", rotary " +
                                  std::to_string(rotary) + ", training " + (training ? "on" : "off");
        for (const bool masked : {true, false}) {
          const auto x = random_input(3, 40, 32, 7).to(torch::kFloat64);
          const auto xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
          const auto m = masked ? mask : torch::Tensor();
          torch::manual_seed(5);
          const auto a = p.builtin->forward(xa, m);
          torch::manual_seed(5);
          const auto b = p.py->forward(xb, m);
          ASSERT_EQ(b.scalar_type(), torch::kFloat64) << where;
          EXPECT_LE(max_abs_diff(a, b), 1e-12) << where << ", mask " << masked;
          const auto w = torch::randn_like(a);
          (a * w).sum().backward();
          (b * w).sum().backward();
          EXPECT_LE(max_abs_diff(xa.grad(), xb.grad()), 1e-12) << where << ", mask " << masked;
          const auto py_params = p.py->named_parameters();  // find() points into it
          for (const auto& prm : p.builtin->named_parameters()) {
            const auto* other = py_params.find(python_name(prm.key()));
            ASSERT_NE(other, nullptr) << prm.key();
            EXPECT_LE(max_abs_diff(prm.value().grad(), other->grad()), 1e-12) << prm.key() << ", " << where;
          }
          for (auto& prm : p.builtin->parameters()) prm.mutable_grad() = torch::Tensor();
          for (auto& prm : p.py->parameters()) prm.mutable_grad() = torch::Tensor();
        }
        if (training) {  // the dropout acts: evaluation differs from training
          torch::NoGradGuard g;
          const auto x = random_input(3, 40, 32, 7).to(torch::kFloat64);
          const auto b = p.py->forward(x, mask);
          p.py->eval();
          EXPECT_GT(max_abs_diff(p.py->forward(x, mask), b), 1e-3) << where;
        }
      }
    }
  }
}

TEST(PythonHostAttention, ReturnsTheTransformersProbabilitiesWhenAskedTo) {
  auto p = pair(small_spec(), kHostExample);
  p.builtin->set_record_attention(true);
  p.py->set_record_attention(true);
  const auto x = random_input(2, 20, 32);
  const auto mask = lengths_mask(20, {20, 10});
  torch::NoGradGuard g;
  const auto a = p.builtin->forward(x, mask), b = p.py->forward(x, mask);
  EXPECT_LE(max_abs_diff(a, b), 1e-6);
  ASSERT_TRUE(p.py->last_attention().defined());
  EXPECT_EQ(p.py->last_attention().sizes(), torch::IntArrayRef({2, 4, 20, 20}));
  EXPECT_LE(max_abs_diff(p.builtin->last_attention(), p.py->last_attention()), 1e-7);
}

TEST(PythonHostAttention, BadArgumentsAreNamedInThePythonError) {
  const std::map<std::string, std::string> expected = {
      {"not_a_tensor", "TypeError: lrahost.softmax_attention: q must be a torch.Tensor"},
      {"three_dimensions", "ValueError: lrahost.softmax_attention: q, k and v must be [B, H, L, Dh]; got 3, 4 and 4"},
      {"float_mask", "ValueError: lrahost.softmax_attention: key_mask must be a bool tensor [B, L] = [2, 8]"},
      {"short_mask", "ValueError: lrahost.softmax_attention: key_mask must be a bool tensor [B, L] = [2, 8]"},
      {"dropout_one", "ValueError: lrahost.softmax_attention: dropout_p must be in [0, 1), got 1.0"},
      {"different_batches", "ValueError: lrahost.softmax_attention: q, k and v do not fit together"},
  };
  torch::NoGradGuard g;
  const auto x = random_input(2, 8, 32);
  EXPECT_EQ(make_python(fixture("host_ops.py:MisusesHostAttention"), small_spec())->forward(x, {}).sizes(),
            x.sizes());
  for (const auto& [misuse, message] : expected) {
    auto m = make_python(fixture("host_ops.py:MisusesHostAttention"), small_spec(), {{"misuse", misuse}});
    try {
      m->forward(x, {});
      ADD_FAILURE() << misuse << ": no error";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::plugin) << misuse;
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << misuse << ": " << e.what();
    }
  }
}

host::ModelConfig tiny_model() {
  host::ModelConfig m{};
  m.layers = 2;
  m.d_model = 32;
  m.heads = 4;
  m.qkv_dim = 32;
  m.ffn_dim = 64;
  m.dropout = 0.1;
  m.attention_dropout = 0.1;
  m.pooling = "cls";
  m.positions = "sinusoidal";
  m.max_len = 40;
  return m;
}

// 20 AdamW steps of the host's backbone around each mixer, from the same
// initial state and on the same batches, with dropout on: the losses agree.
std::vector<double> train_losses(host::Classifier& model, int steps) {
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(2e-3).weight_decay(0.01));
  model->train();
  torch::manual_seed(123);  // dropout draws
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + s);  // the batch, independent of the draws
    auto ids = torch::randint(1, 17, {8, 40}, gen, torch::kLong);
    auto lengths = torch::randint(5, 41, {8}, gen, torch::kLong);
    auto mask = torch::arange(40).unsqueeze(0).lt(lengths.unsqueeze(1));
    auto labels = torch::randint(0, 10, {8}, gen, torch::kLong);
    ids = ids.masked_fill(mask.logical_not(), 0);
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(ids, mask), labels);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// For the example in PyTorch and for the one whose attention the host computes.
void expect_the_transformers_trajectory(const std::string& example) {
  const auto& transformer = host::load_plugin(std::string(LRA_PLUGIN_DIR) + "/lra_mixer_transformer.so",
                                              LRA_KIND_MIXER);
  const auto& py = python(example);
  const host::BackboneSpec spec{tiny_model(), 17, 10, 0};
  torch::manual_seed(0);
  host::Classifier a(spec, host::plugin_mixer_factory(transformer, host::resolve_mixer_options(transformer, {})));
  host::Classifier b(spec, host::plugin_mixer_factory(py, host::resolve_mixer_options(py, {})));
  copy_state(*a, *b);
  EXPECT_EQ(host::count_parameters(*a), host::count_parameters(*b));
  const auto la = train_losses(a, 20), lb = train_losses(b, 20);
  ASSERT_EQ(la.size(), 20u);
  double worst = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_NEAR(la[i], lb[i], 1e-5 * std::max(1.0, std::abs(la[i]))) << "step " << i;
    worst = std::max(worst, std::abs(la[i] - lb[i]));
  }
  ::testing::Test::RecordProperty("largest_loss_difference", std::to_string(worst));
  EXPECT_GT(std::abs(la.front() - la.back()), 1e-3) << "the model trained";
  // And the weights they arrive at.
  auto pa = a->named_parameters();
  for (const auto& p : b->named_parameters()) {
    std::string name = p.key();
    name = std::regex_replace(name, std::regex("mixer\\.(q|k|v|o)\\."), "mixer.proj.$1.");
    ASSERT_NE(pa.find(name), nullptr) << name;
    EXPECT_LE(max_abs_diff(*pa.find(name), p.value()), 1e-4) << name;
  }
}

TEST(PythonMixerParity, WholeModelLossTrajectoryEqualsTheTransformersFor20Steps) {
  expect_the_transformers_trajectory(kExample);
}

TEST(PythonHostAttention, WholeModelLossTrajectoryEqualsTheTransformersFor20Steps) {
  expect_the_transformers_trajectory(kHostExample);
}

// ---- 7. two files named model.py in one process ------------------------------------

TEST(PythonMixerLoading, TwoModelPyFilesWithTheSameClassAndHelperNamesStayApart) {
  const auto& a = python(fixture("twins/a/model.py:Mixer"));
  const auto& b = python(fixture("twins/b/model.py:Mixer"));
  EXPECT_NE(&a, &b);
  EXPECT_EQ(a.descriptor.name, "Mixer");
  EXPECT_EQ(b.descriptor.name, "Mixer");
  EXPECT_NE(a.sha256, b.sha256);
  // Each records its own helper.py among its sources.
  for (const auto* p : {&a, &b}) {
    ASSERT_TRUE(p->source.at("files").contains("helper.py")) << p->source.dump();
    EXPECT_TRUE(p->source.at("files").contains("model.py")) << p->source.dump();
    EXPECT_EQ(p->source.at("files").size(), 2u) << p->source.dump();
  }
  EXPECT_NE(a.source["files"]["helper.py"], b.source["files"]["helper.py"]);
  auto ma = make_python(fixture("twins/a/model.py:Mixer"), small_spec());
  auto mb = make_python(fixture("twins/b/model.py:Mixer"), small_spec());
  const auto x = random_input(2, 8, 32);
  torch::NoGradGuard g;
  EXPECT_LE(max_abs_diff(ma->forward(x, {}), x * 2.0), 1e-6) << "a/model.py with a/helper.py";
  EXPECT_LE(max_abs_diff(mb->forward(x, {}), x * -3.0 + 1.0), 1e-6) << "b/model.py with b/helper.py";
  // Loading a's again (cached) does not disturb either.
  EXPECT_EQ(&python(fixture("twins/a/model.py:Mixer")), &a);
  EXPECT_LE(max_abs_diff(ma->forward(x, {}), x * 2.0), 1e-6);
}

// ---- 8. buffers, train/eval and dtype -------------------------------------------------

int64_t buffer_int(lra::Mixer& m, const std::string& name) { return weight(m, name).item<int64_t>(); }

TEST(PythonMixerState, BuffersReplacedInForwardStayInSyncWithTheHost) {
  auto m = make_python(fixture("stateful.py:Stateful"), small_spec());
  std::vector<std::string> names;
  for (const auto& b : m->named_buffers()) names.push_back(b.key());
  EXPECT_EQ(names, (std::vector<std::string>{"calls", "training_calls", "inner.total"}));
  const auto x = random_input(2, 8, 32);
  torch::NoGradGuard g;
  for (int i = 0; i < 3; ++i) m->forward(x, {});
  EXPECT_EQ(buffer_int(*m, "calls"), 3);
  EXPECT_EQ(buffer_int(*m, "training_calls"), 0) << "make_python leaves it in evaluation mode";
  EXPECT_EQ(weight(*m, "inner.total").item<double>(), 6.0);
  // The host's state dict holds the new values: saved, loaded into a fresh
  // mixer, which Python then counts on from.
  TempPath file;
  host::save_module(*m, file.path);
  auto fresh = make_python(fixture("stateful.py:Stateful"), small_spec());
  host::load_module(*fresh, file.path, torch::kCPU);
  EXPECT_EQ(buffer_int(*fresh, "calls"), 3);
  fresh->forward(x, {});
  EXPECT_EQ(buffer_int(*fresh, "calls"), 4) << "Python continued from the loaded value";
  EXPECT_EQ(weight(*fresh, "inner.total").item<double>(), 8.0);
  EXPECT_LE(max_abs_diff(fresh->forward(x, {}), m->forward(x, {})), 1e-6) << "the same weights";
}

// The buffer a forward used and then replaced keeps, for that forward's
// backward, the value it had: re-registering the replacement must not write
// into the tensor the autograd graph saved.
TEST(PythonMixerState, ABufferReplacedAfterUseKeepsItsValueForThisForwardsBackward) {
  auto m = make_python(fixture("stateful.py:Gain"), small_spec());
  m->train();
  for (const double gain : {1.0, 0.5, 0.25}) {
    auto x = random_input(2, 8, 32).requires_grad_(true);
    auto y = m->forward(x, {});
    EXPECT_EQ(weight(*m, "gain").item<double>(), gain * 0.5) << "the host sees the replacement";
    EXPECT_LE(max_abs_diff(y, x.detach() * gain), 1e-6);
    y.sum().backward();
    EXPECT_LE(max_abs_diff(x.grad(), torch::full_like(x, gain)), 1e-6) << "dy/dx is the gain this forward used";
  }
}

TEST(PythonMixerState, TrainAndEvalReachPython) {
  auto m = make_python(fixture("stateful.py:Stateful"), small_spec());
  const auto x = random_input(2, 8, 32);
  torch::NoGradGuard g;
  m->train();
  m->forward(x, {});
  m->forward(x, {});
  m->eval();
  m->forward(x, {});
  EXPECT_EQ(buffer_int(*m, "calls"), 3);
  EXPECT_EQ(buffer_int(*m, "training_calls"), 2);
  // Through the backbone, as the trainer switches modes.
  const host::BackboneSpec spec{tiny_model(), 17, 10, 0};
  const auto& p = python(fixture("stateful.py:Stateful"));
  host::Classifier model(spec, host::plugin_mixer_factory(p, host::resolve_mixer_options(p, {})));
  auto ids = torch::randint(1, 17, {2, 10}, torch::kLong);
  auto mask = torch::ones({2, 10}, torch::kBool);
  model->train();
  model->forward(ids, mask);
  model->eval();
  model->forward(ids, mask);
  auto bufs = model->named_buffers();
  EXPECT_EQ(bufs.find("block0.mixer.training_calls")->item<int64_t>(), 1);
  EXPECT_EQ(bufs.find("block1.mixer.calls")->item<int64_t>(), 2);
}

TEST(PythonMixerState, DtypeMovesReachPythonsTensors) {
  auto m = make_python(fixture("stateful.py:Stateful"), small_spec());
  const auto x = random_input(2, 8, 32);
  torch::NoGradGuard g;
  m->forward(x, {});
  m->to(torch::kFloat64);
  // Stateful.forward raises unless its parameters and floating buffers have x's dtype.
  const auto y = m->forward(x.to(torch::kFloat64), {});
  EXPECT_EQ(y.scalar_type(), torch::kFloat64);
  EXPECT_EQ(weight(*m, "proj.weight").scalar_type(), torch::kFloat64);
  EXPECT_EQ(weight(*m, "inner.total").scalar_type(), torch::kFloat64);
  EXPECT_EQ(weight(*m, "inner.total").item<double>(), 4.0);
  EXPECT_EQ(buffer_int(*m, "calls"), 2);
  // A float32 input now is the mixer's own error, named with its file and line.
  try {
    m->forward(x, {});
    FAIL() << "float32 input to a float64 mixer";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stateful.py:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("raised TypeError: parameters and buffers are torch.float64"),
              std::string::npos)
        << e.what();
  }
}

// Tied weights (self.k = self.q) are one parameter, as PyTorch's parameters()
// has them: counted once against the budget, updated once per optimizer step.
TEST(PythonMixerState, ATiedParameterIsRegisteredAndTrainedOnce) {
  auto m = make_python(fixture("tied.py:SharedQK"), small_spec());
  std::vector<std::string> names;
  for (const auto& p : m->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"q.weight", "v.weight", "o.weight"}));
  EXPECT_EQ(host::count_parameters(*m), 3 * 32 * 32);
  EXPECT_EQ(m->named_buffers().size(), 1u);
  // One AdamW step moves the shared weight by the lr once (Adam's first step is lr * sign(grad)).
  m->train();
  const auto before = weight(*m, "q.weight").clone();
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
  m->forward(random_input(2, 8, 32), {}).pow(2).sum().backward();
  opt.step();
  const double moved = (weight(*m, "q.weight") - before).abs().max().item<double>();
  EXPECT_NEAR(moved, 1e-2, 1e-4) << "a tensor listed twice would be stepped twice";
}

// A replaced parameter is not silently lost to the optimizer.
TEST(PythonMixerState, AParameterReplacedInForwardIsRefusedNamingIt) {
  auto m = make_python(fixture("faults.py:ReplacesParameter"), small_spec());
  try {
    m->forward(random_input(2, 8, 32), {});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
    EXPECT_NE(std::string(e.what()).find("replaced its parameter 'weight' with a new tensor during forward"),
              std::string::npos)
        << e.what();
  }
}

// ---- 2. the contract's refusals (the CLI's exit codes: tests/integration/test_python_cli.cpp) ----

TEST(PythonMixerContract, EachRefusalHasItsKindAndMessage) {
  struct Case {
    std::string spec;
    lra::ErrorKind kind;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {fixture("faults.py:Missing"), lra::ErrorKind::plugin,
       {"faults.py defines no class 'Missing'", "BackwardRaises, BadOptionType, Base, ForwardRaises, InitRaises"}},
      {fixture("faults.py:NotAModule"), lra::ErrorKind::plugin,
       {"faults.py:NotAModule is a type, not a torch.nn.Module"}},
      {fixture("faults.py:BadOptionType"), lra::ErrorKind::plugin,
       {"faults.py:BadOptionType.lra_options['window'] = [64, 128] is a list"}},
      {fixture("faults.py:UnknownCapability"), lra::ErrorKind::plugin,
       {"faults.py:UnknownCapability.lra_capabilities: unknown capability 'telepathy'"}},
      {fixture("syntax_error.py:Broken"), lra::ErrorKind::plugin, {"syntax_error.py:5: syntax error"}},
      {fixture("missing_module.py:Mixer"), lra::ErrorKind::plugin,
       {"missing_module.py:2", "imports module 'lra_no_such_module_for_tests'"}},
      {fixture("faults.py:"), lra::ErrorKind::usage, {"names a Python file but no class"}},
      {fixture("faults.py"), lra::ErrorKind::usage, {"names a Python file but no class"}},
      {fixture("faults.py:Bad-Name"), lra::ErrorKind::usage, {"'Bad-Name' is not a Python class name"}},
      {fixture("faults.py:Outer.Inner"), lra::ErrorKind::usage, {"'Outer.Inner' is not a Python class name"}},
      {fixture("faults.py:1Class"), lra::ErrorKind::usage, {"'1Class' is not a Python class name"}},
      {fixture("faults.py:Bad$x"), lra::ErrorKind::usage, {"has a character outside"}},
      {fixture("no_such_file.py:Mixer"), lra::ErrorKind::usage, {"no_such_file.py is not a readable file"}},
      {fixture("contract.py:NarrowInit"), lra::ErrorKind::plugin,
       {"contract.py:NarrowInit.__init__ does not take heads, qkv_dim, max_len, causal, attention_dropout, "
        "layer_index, seed, rotary_base", "add them or **kwargs"}},
      {fixture("contract.py:CapsAsString"), lra::ErrorKind::plugin,
       {"contract.py:CapsAsString.lra_capabilities must be a set of strings"}},
      {fixture("contract.py:OptionClashesWithSpec"), lra::ErrorKind::plugin,
       {"contract.py:OptionClashesWithSpec.lra_options['heads'] clashes with the mixer spec's field"}},
      {fixture("contract.py:HugeIntOption"), lra::ErrorKind::plugin,
       {"contract.py:HugeIntOption.lra_options['window'] = 1180591620717411303424 does not fit a 64-bit integer"}},
      {fixture("default_dtype.py:Mixer"), lra::ErrorKind::plugin,
       {"default_dtype.py changed torch's default dtype (torch.set_default_dtype(torch.float64))"}},
  };
  for (const auto& c : cases) {
    const auto [kind, message] = load_error(c.spec);
    EXPECT_EQ(static_cast<int>(kind), static_cast<int>(c.kind)) << c.spec << ": " << message;
    for (const auto& s : c.says) EXPECT_NE(message.find(s), std::string::npos) << c.spec << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

// The host's torch settings are the host's: a class that changes them is
// refused, naming what it changed, and the setting is put back.
TEST(PythonMixerContract, ChangingTorchsDefaultDtypeOrGradModeIsRefusedAndUndone) {
  for (int attempt = 0; attempt < 2; ++attempt) {  // refused again, not cached as imported
    const auto [kind, message] = load_error(fixture("default_dtype.py:Mixer"));
    EXPECT_EQ(kind, lra::ErrorKind::plugin) << message;
    EXPECT_EQ(c10::get_default_dtype(), caffe2::TypeMeta::Make<float>()) << "put back";
  }
  auto expect_refused = [](const std::function<void()>& call, const std::string& says) {
    try {
      call();
      ADD_FAILURE() << "no error: " << says;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_TRUE(c10::GradMode::is_enabled()) << says;
    EXPECT_EQ(c10::get_default_dtype(), caffe2::TypeMeta::Make<float>()) << says;
  };
  expect_refused([] { make_python(fixture("contract.py:GradOffInInit"), small_spec()); },
                 "contract.py:GradOffInInit.__init__ changed the grad mode (torch.set_grad_enabled(False) left in "
                 "effect)");
  auto grad_off = make_python(fixture("contract.py:GradOffInForward"), small_spec());
  expect_refused([&] { grad_off->forward(random_input(2, 8, 32), {}); },
                 "contract.py:GradOffInForward.forward changed the grad mode");
  auto dtype = make_python(fixture("contract.py:DefaultDtypeInForward"), small_spec());
  expect_refused([&] { dtype->forward(random_input(2, 8, 32), {}); },
                 "contract.py:DefaultDtypeInForward.forward changed torch's default dtype "
                 "(torch.set_default_dtype(torch.float64))");
}

// Options reach __init__ typed by their defaults, with --set mixer.NAME=VALUE applied.
TEST(PythonMixerContract, OptionsReachInitTypedByTheirDefaults) {
  const auto& p = python(fixture("contract.py:Options"));
  // Its identity is its own sources, whatever else this process opened from the folder (faults.py, ...).
  EXPECT_EQ(p.source.at("files").size(), 1u) << p.source.dump();
  EXPECT_TRUE(p.source.at("files").contains("contract.py")) << p.source.dump();
  std::vector<lra::OptionSpec> specs;
  ASSERT_TRUE(p.mixer().options(&specs).ok());
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "window");
  EXPECT_EQ(std::get<int64_t>(specs[0].default_value), 128);
  EXPECT_EQ(std::get<bool>(specs[1].default_value), true);
  EXPECT_EQ(std::get<double>(specs[2].default_value), 0.5);
  EXPECT_EQ(std::get<std::string>(specs[3].default_value), "sum");
  const auto x = random_input(2, 8, 32);
  torch::NoGradGuard g;
  EXPECT_LE(max_abs_diff(make_python(fixture("contract.py:Options"), small_spec())->forward(x, {}), x * 64.0), 1e-5);
  auto set = make_python(fixture("contract.py:Options"), small_spec(),
                         {{"window", "256"}, {"gate", "false"}, {"scale", "2"}, {"mode", "double"}});
  EXPECT_LE(max_abs_diff(set->forward(x, {}), x * -1024.0), 1e-3);
  // A value of the wrong type is the host's refusal (rules), before Python sees it.
  try {
    make_python(fixture("contract.py:Options"), small_spec(), {{"window", "wide"}});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::rules) << e.what();
  }
}

TEST(PythonMixerContract, ExceptionsInInitAndForwardNameFileLineAndException) {
  try {
    make_python(fixture("faults.py:InitRaises"), small_spec());
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
    EXPECT_TRUE(std::regex_search(m, std::regex("faults\\.py:[0-9]+ \\(in __init__\\): InitRaises\\.__init__ raised "
                                                "ValueError: deliberate failure in __init__")))
        << m;
    EXPECT_NE(m.find("last frames: "), std::string::npos) << m;
    EXPECT_NE(m.find("raise ValueError(\"deliberate failure in __init__\")"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  auto m = make_python(fixture("faults.py:ForwardRaises"), small_spec());
  m->train();
  try {
    m->forward(random_input(2, 8, 32), {});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    const std::string s = e.what();
    EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
    EXPECT_TRUE(std::regex_search(s, std::regex("faults\\.py:[0-9]+ \\(in forward\\): ForwardRaises\\.forward raised "
                                                "RuntimeError: deliberate failure in forward")))
        << s;
    EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  }
}

TEST(PythonMixerContract, NonTensorAndWrongShapeOutputsAreNamed) {
  torch::NoGradGuard g;
  try {
    make_python(fixture("faults.py:ReturnsTuple"), small_spec())->forward(random_input(2, 8, 32), {});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ReturnsTuple.forward returned a tuple, not a torch.Tensor"),
              std::string::npos)
        << e.what();
  }
  try {
    make_python(fixture("faults.py:WrongShape"), small_spec())->forward(random_input(2, 8, 32), {});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("WrongShape.forward returned shape [2, 7, 32] for x of shape [2, 8, 32]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lra::test
