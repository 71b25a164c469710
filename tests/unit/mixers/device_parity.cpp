// A device gives the CPU reference's numbers (the idea of ggml's
// test-backend-ops: the CPU is the reference backend). For every built mixer
// plugin (the Python plugin too, where built): the same weights and input on
// the CPU and on the device, in evaluation mode with a padding mask; the
// outputs at real positions, and the gradients of the input and of every
// parameter, agree. And the host's training path (the LRA classifier,
// train_and_evaluate: AdamW, clipping, evaluation) around `transformer` and
// `linear_transformer`: three updates from the same weights on the same data
// give the same losses and, in float32, the same parameters.
//
// The device is LRA_TEST_DEVICE: cpu (the default: CI's rehearsal, the same
// code against itself, so it cannot rot between GPU loans) or cuda (the GPU
// script: LRA_TEST_DEVICE=cuda build-cuda/bin/test_device_parity, or ctest -R
// DeviceParity in build-cuda/). Asking for cuda where LibTorch sees none fails.
// On CUDA each check runs in float32 (TF32 off) and in bfloat16 autocast, as
// the host trains on CUDA (train/autocast.h); the CPU has no bfloat16 case.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>

#include <ATen/Context.h>
#include <spdlog/sinks/null_sink.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize/archive.h>

#include <lra/attention.h>

#include "device/device.h"
#include "mixer_harness.h"
#include "model/backbone.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "train/adamw.h"
#include "train/autocast.h"
#include "train/trainer.h"

using namespace lra::test;
namespace host = lra::host;

namespace {

// Tolerances, each relative to the reference's scale max(1, max |ref|).
// float32: only the order of reductions differs (other kernels, other
// blocking), ~1e-6 of the scale. Parameters after AdamW get more: each
// update divides a gradient by its own RMS, so a small gradient's rounding
// becomes up to lr x its relative error. bfloat16 autocast rounds every matrix
// product's inputs to 8 significant bits (~4e-3), compounded over a few layers;
// its parameters are not compared. Seen on an H200 (LibTorch 2.11): float32
// within 0.04 of these (parameters 0.11), bfloat16 within 0.56 (losses 0.27).
struct Precision {
  const char* name;
  bool bf16;
  double values;      // a mixer's outputs and gradients
  double losses;      // the classifier's losses over three updates
  double parameters;  // and its parameters after them
};
constexpr Precision kFloat32{"float32", false, 1e-4, 1e-5, 1e-4};
constexpr Precision kBf16{"bfloat16 autocast", true, 3e-2, 5e-2, 0};

// Identical weights: the device's copy gets every parameter and buffer of the reference.
::testing::AssertionResult copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto params = to.named_parameters(), buffers = to.named_buffers();
  if (params.size() != from.named_parameters().size() || buffers.size() != from.named_buffers().size())
    return ::testing::AssertionFailure() << "the two builds have different parameters or buffers";
  for (const auto& p : from.named_parameters()) params[p.key()].copy_(p.value());
  for (const auto& b : from.named_buffers()) buffers[b.key()].copy_(b.value());
  return ::testing::AssertionSuccess();
}

// The device's values against the reference's, to `rel` of the reference's
// scale; `worst` keeps the largest difference seen as a share of its tolerance.
::testing::AssertionResult agree(const std::string& what, const torch::Tensor& device, const torch::Tensor& ref,
                                 double rel, double& worst) {
  const auto got = device.to(torch::kCPU, torch::kDouble), want = ref.to(torch::kDouble);
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << got.sizes() << " against " << want.sizes();
  const double scale = std::max(1.0, want.abs().max().item<double>());
  const double diff = (got - want).abs().max().item<double>();
  worst = std::max(worst, std::isnan(diff) ? INFINITY : diff / (rel * scale));
  if (diff <= rel * scale) return ::testing::AssertionSuccess();  // NaN fails
  return ::testing::AssertionFailure() << what << ": the device differs from the CPU by " << diff << " (tolerance "
                                       << rel << " x scale " << scale << ")";
}

class DeviceParity : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("LRA_TEST_DEVICE");
    const std::string want = env && *env ? env : "cpu";
    ASSERT_TRUE(want == "cpu" || want == "cuda") << "LRA_TEST_DEVICE=" << want << ": expected cpu or cuda";
    if (want == "cuda")
      ASSERT_TRUE(torch::cuda::is_available())
          << "LRA_TEST_DEVICE=cuda, but LibTorch sees no CUDA device (a CPU-only LibTorch, or no GPU or driver): "
             "the device check did not run";
    device_ = want == "cuda" ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (want == "cuda") host::pick_device("cuda");  // and with it the host's choice of fused kernels
    // float32 means float32: no TF32 in cuBLAS (LibTorch's default since 1.12) nor in cuDNN (on by default).
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
    RecordProperty("device", host::describe_device(device_));
    std::cout << "[  device  ] " << host::describe_device(device_) << "\n";
  }
  std::vector<Precision> precisions() const {
    if (device_.is_cuda()) return {kFloat32, kBf16};
    std::cout << "[  device  ] no bfloat16 autocast case on the CPU (the host autocasts on CUDA only)\n";
    return {kFloat32};
  }
  torch::Device device_{torch::kCPU};
};

// A mixer's output and its gradients for sum(output * probe).
struct Pass {
  torch::Tensor y, grad_x;
  std::vector<std::pair<std::string, torch::Tensor>> grads;
};

Pass forward_backward(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& probe,
                      const torch::Device& device, bool bf16) {
  auto xd = x.detach().to(device).requires_grad_(true);  // a leaf of its own, on the CPU too
  torch::Tensor y;
  {
    torch::manual_seed(7);  // whatever a forward draws, it draws alike on both sides (CUDA is seeded too)
    host::CudaBf16Autocast autocast(bf16);
    y = m.forward(xd, mask.to(device)).to(torch::kFloat);
  }
  (y * probe.to(device)).sum().backward();  // outside autocast, as the trainer does
  Pass r{y.cpu(), xd.grad().cpu(), {}};
  for (const auto& p : m.named_parameters())
    if (p.value().grad().defined()) r.grads.emplace_back(p.key(), p.value().grad().cpu());
  return r;
}

// One mixer on the CPU and on the device: a small spec, two examples, one padded.
void check_mixer(const std::string& name, const torch::Device& device, const Precision& p) {
  SCOPED_TRACE(name + ", " + p.name);
  const auto spec = small_spec(32, 4, 64);
  const auto x = random_input(2, 64, 32, 3);
  const auto mask = lengths_mask(64, {64, 41});
  const auto real = mask.unsqueeze(-1).expand_as(x);
  torch::manual_seed(4);
  const auto probe = torch::randn(x.sizes()) * real;  // the loss reads real positions only, as the host's does
  // Reformer hashes a token to a bucket by an argmax over its rotated query:
  // bfloat16 rounding moves near-ties to another bucket, which changes whom
  // they attend to. Under autocast its check is narrowed to everything but the
  // bucket masking: one chunk (64 tokens) attending across buckets, where the
  // hashing decides nothing.
  lra::Params options;
  if (p.bf16 && name == "reformer") options = {{"attend_across_buckets", true}};
  auto ref = build_mixer(name, spec, options, /*seed=*/1), dev = build_mixer(name, spec, options, 1);
  ASSERT_TRUE(copy_state(*ref, *dev));
  dev->to(device);
  const Pass a = forward_backward(*ref, x, mask, probe, torch::kCPU, false);
  const Pass b = forward_backward(*dev, x, mask, probe, device, p.bf16);
  double worst = 0;
  EXPECT_TRUE(agree("output at real positions", b.y.masked_select(real), a.y.masked_select(real), p.values, worst));
  EXPECT_TRUE(agree("gradient of the input", b.grad_x, a.grad_x, p.values, worst));
  ASSERT_EQ(a.grads.size(), b.grads.size()) << "the device's and the CPU's passes reached different parameters";
  ASSERT_FALSE(a.grads.empty()) << "no parameter got a gradient";
  for (size_t i = 0; i < a.grads.size(); ++i) {
    ASSERT_EQ(a.grads[i].first, b.grads[i].first);
    EXPECT_TRUE(agree("gradient of " + a.grads[i].first, b.grads[i].second, a.grads[i].second, p.values, worst));
  }
  std::cout << "[  parity  ] " << name << " (" << p.name << "): output and " << a.grads.size() + 1
            << " gradients, largest difference " << worst << " of the tolerance\n";
}

TEST_F(DeviceParity, EveryBuiltInMixerGivesTheCpusOutputsAndGradients) {
  const auto names = built_mixers();
  ASSERT_GE(names.size(), 13u) << "plugins in " << LRA_PLUGIN_DIR;
  for (const Precision& p : precisions())
    for (const auto& name : names)
      if (name != "python") check_mixer(name, device_, p);
}

// The SDK's masked softmax attention (the fused kernel under LibTorch 2.x) at
// lengths around the one where cuDNN's backward goes wrong on Hopper (64 mod
// 128, lra/attention.h): output and the gradients of q, k and v, one example
// padded to two thirds. Head dimension 32, and 4 and 12 (Pathfinder's is 4),
// which the SDK zero-pads to a multiple of 8 on CUDA.
TEST_F(DeviceParity, TheSdksMaskedAttentionGivesTheCpusGradientsAtEveryLength) {
  std::vector<std::pair<int64_t, int64_t>> cases;  // length, head dimension
  for (const int64_t L : {63, 64, 65, 100, 128, 192, 320, 1001, 1025}) cases.emplace_back(L, 32);
  for (const int64_t L : {64, 1025}) cases.emplace_back(L, 4);
  cases.emplace_back(100, 12);
  for (const Precision& p : precisions())
    for (const auto& [L, dh] : cases) {
      SCOPED_TRACE("length " + std::to_string(L) + ", head dimension " + std::to_string(dh) + ", " + p.name);
      torch::manual_seed(L);
      const auto q = torch::randn({2, 2, L, dh}), k = torch::randn({2, 2, L, dh}), v = torch::randn({2, 2, L, dh});
      const auto mask = lengths_mask(L, {L, 2 * L / 3});
      const auto real = mask.unsqueeze(1).unsqueeze(-1).expand_as(q);
      const auto probe = torch::randn(q.sizes()) * real;
      auto pass = [&](const torch::Device& device, bool bf16) {
        std::vector<torch::Tensor> in;
        for (const auto& t : {q, k, v}) in.push_back(t.detach().to(device).requires_grad_(true));
        torch::Tensor y;
        {
          host::CudaBf16Autocast autocast(bf16);
          y = lra::ops::softmax_attention(in[0], in[1], in[2], mask.to(device), false, 0.0, false).to(torch::kFloat);
        }
        (y * probe.to(device)).sum().backward();
        return std::vector<torch::Tensor>{y.cpu(), in[0].grad().cpu(), in[1].grad().cpu(), in[2].grad().cpu()};
      };
      const auto a = pass(torch::kCPU, false), b = pass(device_, p.bf16);
      double worst = 0;
      EXPECT_TRUE(agree("output at real positions", b[0].masked_select(real), a[0].masked_select(real), p.values, worst));
      EXPECT_TRUE(agree("gradient of q", b[1], a[1], p.values, worst));
      EXPECT_TRUE(agree("gradient of k", b[2], a[2], p.values, worst));
      EXPECT_TRUE(agree("gradient of v", b[3], a[3], p.values, worst));
      std::cout << "[  parity  ] softmax_attention, length " << L << ", head dimension " << dh << " (" << p.name
                << "): largest difference "
                << worst << " of the tolerance\n";
    }
}

// A tiny classification task: random ids of random lengths (padding masks), random labels.
lra::Dataset tiny_dataset() {
  lra::Dataset d;
  d.info.vocab_size = 20;
  d.info.num_classes = 4;
  d.info.natural_len = 32;
  std::mt19937_64 rng(11);
  auto fill = [&](lra::Split& s, int n) {
    for (int i = 0; i < n; ++i) {
      const int64_t length = 8 + static_cast<int64_t>(rng() % 25);  // 8..32 of max_len 32
      for (int64_t t = 0; t < length; ++t) s.tokens.push_back(1 + static_cast<int32_t>(rng() % 19));
      s.offsets.push_back(static_cast<int64_t>(s.tokens.size()));
      s.labels.push_back(static_cast<int32_t>(rng() % 4));
    }
  };
  fill(d.train, 8);  // one batch: every update sees it, reshuffled
  fill(d.val, 6);
  fill(d.test, 6);
  return d;
}

host::Classifier classifier(const std::string& plugin, double dropout = 0.0) {
  host::ModelConfig m;
  m.layers = 2;
  m.d_model = 32;
  m.heads = 4;
  m.qkv_dim = 32;
  m.ffn_dim = 64;
  m.dropout = m.attention_dropout = dropout;
  m.pooling = "cls";
  m.positions = "sinusoidal";
  m.max_len = 32;
  const auto& p = loaded_mixer(plugin);
  torch::manual_seed(0);
  return host::Classifier(host::BackboneSpec{m, 20, 4, /*seed=*/0},
                          host::plugin_mixer_factory(p, host::resolve_mixer_options(p, {})));
}

// Three updates (or `steps`) of the host's trainer with the smoke presets' optimizer, a
// constant rate and clipping, validation after each update.
host::TrainResult train(host::Classifier& model, const lra::Dataset& data, const torch::Device& device, bool bf16,
                        int64_t steps = 3, const host::GraphPlan& graphs = {}) {
  host::TrainerOptions o;
  o.graphs = graphs;
  auto& t = o.train;
  t.steps = steps;
  t.batch_size = 8;
  t.lr = 3e-3;
  t.schedule = "constant";
  t.weight_decay = 0.1;
  t.beta1 = 0.9;
  t.beta2 = 0.98;
  t.eps = 1e-9;
  t.grad_clip = 1.0;
  t.eval_every = 1;
  t.eval_batch_size = 6;
  o.device = device;
  o.max_len = 32;
  o.bf16 = bf16;
  spdlog::logger log("parity", std::make_shared<spdlog::sinks::null_sink_mt>());
  return host::train_and_evaluate(model, data, o, log);
}

TEST_F(DeviceParity, TheHostsTrainingStepsGiveTheCpusLossesAndParameters) {
  const lra::Dataset data = tiny_dataset();
  for (const Precision& p : precisions()) {
    for (const std::string name : {"transformer", "linear_transformer"}) {
      SCOPED_TRACE(name + ", " + p.name);
      auto ref = classifier(name), dev = classifier(name);
      ASSERT_TRUE(copy_state(*ref, *dev));
      std::vector<torch::Tensor> initial;
      for (const auto& q : ref->parameters()) initial.push_back(q.detach().clone());
      const auto a = train(ref, data, torch::kCPU, false), b = train(dev, data, device_, p.bf16);
      ASSERT_EQ(a.history.size(), 3u);
      ASSERT_EQ(b.history.size(), 3u);
      double worst = 0;
      auto loss = [&](const std::string& what, double got, double want) {
        EXPECT_TRUE(agree(what, torch::tensor(got), torch::tensor(want), p.losses, worst));
      };
      for (size_t i = 0; i < 3; ++i) {
        loss("training loss of update " + std::to_string(i + 1), b.history[i].at("train_loss"), a.history[i].at("train_loss"));
        loss("validation loss after update " + std::to_string(i + 1), b.history[i].at("val_loss"), a.history[i].at("val_loss"));
      }
      loss("test loss", b.test.loss, a.test.loss);
      // Not vacuous: the updates moved the weights far more than the tolerance.
      double moved = 0;
      for (size_t i = 0; i < initial.size(); ++i)
        moved = std::max(moved, (ref->parameters()[i] - initial[i]).abs().max().item<double>());
      EXPECT_GT(moved, 1e-3);
      if (!p.bf16) {  // bfloat16: the losses only, loosely (its rounding is meant to differ from float32)
        auto trained = ref->named_parameters();
        for (const auto& q : dev->named_parameters())
          EXPECT_TRUE(agree("parameter " + q.key(), q.value(), trained[q.key()], p.parameters, worst));
      }
      std::cout << "[  parity  ] host training, " << name << " (" << p.name << "): training loss "
                << a.history[0].at("train_loss").get<double>() << " -> " << a.history[2].at("train_loss").get<double>()
                << ", largest difference " << worst << " of the tolerance\n";
    }
  }
}

// The host's optimizer step (train/adamw.h: fused AdamW and foreach clipping
// on CUDA) against LibTorch's AdamW and clip_grad_norm_ on the CPU: two
// groups (one without weight decay), a parameter without a gradient, gradients
// large enough to be clipped and small enough not to be, and a resume halfway
// (the optimizer state saved and loaded into a new optimizer, as checkpoints do).
TEST_F(DeviceParity, TheHostsOptimizerStepGivesTheCpusAdamW) {
  torch::manual_seed(11);
  std::vector<torch::Tensor> init = {torch::randn({64, 32}), torch::randn({32}), torch::randn({7, 5, 3}), torch::randn({4})};
  auto make = [&](const torch::Device& device) {
    std::vector<torch::Tensor> ps;
    for (const auto& t : init) ps.push_back(t.clone().to(device).requires_grad_(true));
    return ps;
  };
  auto groups_of = [](const std::vector<torch::Tensor>& ps) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{ps[0], ps[1]});
    auto no_decay = std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-9).weight_decay(0.0));
    g.emplace_back(std::vector<torch::Tensor>{ps[2], ps[3]}, std::move(no_decay));
    return g;
  };
  const auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-9).weight_decay(0.1);
  auto ref = make(torch::kCPU), dev = make(device_);
  torch::optim::AdamW ref_opt(groups_of(ref), options);
  auto dev_opt = std::make_unique<host::HostAdamW>(groups_of(dev), options);
  for (int step = 0; step < 6; ++step) {
    if (step == 3) {  // a checkpoint and a resume
      std::stringstream saved;
      {
        torch::serialize::OutputArchive out;
        dev_opt->save(out);
        out.save_to(saved);
      }
      dev_opt = std::make_unique<host::HostAdamW>(groups_of(dev), options);
      torch::serialize::InputArchive in;
      in.load_from(saved, device_);
      dev_opt->load(in);
    }
    const double size = step % 2 ? 10.0 : 0.01;  // clipped, then not
    for (size_t i = 0; i < ref.size(); ++i) {
      if (i == 3 && step < 2) continue;  // no gradient yet: AdamW leaves it alone
      const auto g = torch::randn(init[i].sizes()) * size;
      ref[i].mutable_grad() = g.clone();
      dev[i].mutable_grad() = g.to(device_);
    }
    torch::nn::utils::clip_grad_norm_(ref, 1.0);
    ref_opt.step();
    host::clip_grad_norm(dev, 1.0);
    dev_opt->step();
  }
  std::cout << "[  parity  ] optimizer step: " << dev_opt->kind() << "\n";
  if (device_.is_cuda() && host::fused_optimizer_compiled()) EXPECT_EQ(dev_opt->kind(), "fused AdamW (CUDA)");
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_TRUE(agree("parameter " + std::to_string(i), dev[i].detach(), ref[i].detach(), kFloat32.parameters, worst));
    EXPECT_GT((ref[i] - init[i]).abs().max().item<double>(), 1e-3) << "parameter " << i << " did not move";
  }
  std::cout << "[  parity  ] optimizer step: largest difference " << worst << " of the tolerance\n";
}

// CUDA graphs (train/step_graph.h): 20 updates captured after the eager
// warm-up against 20 eager ones, from the same weights, on the same data, with
// dropout: the same losses update by update, and the same parameters. On the
// CPU nothing is captured, but the staged path still runs (each batch copied
// into the same tensors, each update run eagerly by UpdateGraph) and must give
// the usual path's numbers exactly.
TEST_F(DeviceParity, CapturedUpdatesGiveTheEagerUpdatesLossesAndParameters) {
  const lra::Dataset data = tiny_dataset();
  const host::GraphPlan capture{true, "captured", false, /*required=*/true};
  for (const std::string name : {"transformer", "linear_transformer"}) {
    SCOPED_TRACE(name);
    auto eager = classifier(name, 0.1), staged = classifier(name, 0.1);
    ASSERT_TRUE(copy_state(*eager, *staged));
    torch::manual_seed(5);
    const auto a = train(eager, data, device_, false, 20);
    torch::manual_seed(5);
    const auto b = train(staged, data, device_, false, 20, capture);
    ASSERT_EQ(a.history.size(), 20u);
    ASSERT_EQ(b.history.size(), 20u);
    EXPECT_EQ(b.cuda_graphs, "captured");
    const double tolerance = device_.is_cuda() ? kFloat32.losses : 0.0;  // the CPU: the same operations
    double worst = 0;
    for (size_t i = 0; i < 20; ++i)
      EXPECT_TRUE(agree("training loss of update " + std::to_string(i + 1), torch::tensor(b.history[i].at("train_loss").get<double>()),
                        torch::tensor(a.history[i].at("train_loss").get<double>()), std::max(tolerance, 1e-300), worst));
    auto trained = eager->named_parameters();
    for (const auto& q : staged->named_parameters())
      EXPECT_TRUE(agree("parameter " + q.key(), q.value(), trained[q.key()],
                        device_.is_cuda() ? kFloat32.parameters : 1e-300, worst));
    // Not vacuous: dropout draws differ between updates, so the losses do too.
    EXPECT_NE(a.history[0].at("train_loss").get<double>(), a.history[19].at("train_loss").get<double>());
    std::cout << "[  parity  ] " << (device_.is_cuda() ? "captured" : "staged") << " updates, " << name
              << ": training loss " << a.history[0].at("train_loss").get<double>() << " -> "
              << a.history[19].at("train_loss").get<double>() << ", largest difference " << worst
              << " of the tolerance\n";
  }
}

// Last in the file, so that a plain run of the executable tests the rest
// first: embedding CPython and importing torch makes torch_python's autograd
// engine the process's (LibTorch 2.11 on an H200: every CUDA backward after it
// then failed, an internal assert on the engine's device queues).
TEST_F(DeviceParity, ThePythonPluginGivesTheCpusOutputsAndGradients) {
  const auto names = built_mixers();
  if (std::find(names.begin(), names.end(), "python") == names.end())
    GTEST_SKIP() << "no Python plugin in this build (tests/unit/python_mixer.cmake)";
  // The example in PyTorch, and the one whose attention is the host's (lrahost.softmax_attention).
  for (const char* example : {"python", "python-host"})
    for (const Precision& p : precisions()) check_mixer(example, device_, p);
}

}  // namespace
