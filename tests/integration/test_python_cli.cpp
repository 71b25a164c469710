// Python mixers through the binary (issue 28): every fault in the researcher's
// file has its own message and documented exit code, inspect --check and run
// hold a Python mixer to the conformance checks, and a Python mixer behaves
// like a C++ plugin under Ctrl-C, kill -9 and --resume, and in `forget`.
// Fixtures: tests/fixtures/python/; the example: sdk/examples/python/.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kExample = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/softmax_attention.py:SoftmaxAttention";
std::string fixture(const std::string& spec) { return std::string(LRA_SOURCE_DIR) + "/tests/fixtures/python/" + spec; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The last non-empty line of a file.
std::string last_line(const fs::path& p) {
  std::string text = read_text(p);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

class PythonCli : public ::testing::Test {
 public:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string data() { return (dir_->path() / "data").string(); }
  // The tiny ListOps run (tiny_run.h) with `plugin` as the mixer; the plugin
  // argument quoted for the shell.
  static std::string tiny(const std::string& plugin, const fs::path& out) {
    std::string args = tiny_run_args(data(), out.string());
    args.replace(args.find("--plugin transformer"), 20, "--plugin '" + plugin + "'");
    return args;
  }

 protected:
  static TempDir* dir_;
};
TempDir* PythonCli::dir_ = nullptr;

// ---- optimizer hints (SDK 1.2) from a Python class ---------------------------------

TEST_F(PythonCli, OptimizerHintsOfAPythonClassGroupTheOptimizerAndAreRecorded) {
  const fs::path out = dir_->path() / "hints";
  const Outcome o = lrahost(tiny(fixture("hints.py:Hinted"), out));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "optimizer hints: 1 parameter tensor(s), 32 numbers: no weight decay, learning rate x")) << o.output;
  const auto r = nlohmann::json::parse(read_text(out / "result.json"));
  const auto& groups = r["optimizer"]["groups"];
  ASSERT_EQ(groups.size(), 3u) << groups.dump(1);
  EXPECT_EQ(groups[0]["lr_factor"], 1.0);
  EXPECT_EQ(groups[1]["names"].size(), 1u);
  EXPECT_TRUE(contains(groups[1]["names"][0].get<std::string>(), "log_decay")) << groups.dump(1);
  EXPECT_EQ(groups[1]["weight_decay"], 0.0);
  EXPECT_LT(groups[1]["lr_factor"].get<double>(), 1.0);
  EXPECT_TRUE(contains(groups[2]["names"][0].get<std::string>(), "proj.bias")) << groups.dump(1);
  EXPECT_EQ(groups[2]["lr_factor"], 1.0);
  const Outcome v = lrahost("verify " + out.string());
  EXPECT_TRUE(contains(v.output, "open, valid")) << v.output;

  // Each hint run refuses, inspect --check refuses too (issue 48): the check is
  // where a researcher finds out, not the first run.
  for (const auto& [cls, says] : {std::pair<std::string, std::string>{"RaisesLearningRate", "may only lower the learning rate"},
                                  {"UnknownKey", "unknown key 'weight_decay'"},
                                  {"NamesNoParameter", "kernel.log_dt"}}) {
    const fs::path bad = dir_->path() / ("hints-" + cls);
    const Outcome b = lrahost(tiny(fixture("hints.py:" + cls), bad));
    EXPECT_EQ(b.code, 3) << b.output;
    EXPECT_TRUE(contains(b.output, says)) << b.output;
    EXPECT_FALSE(fs::exists(bad)) << "refused before the run directory is made";
    const Outcome i = lrahost("inspect " + fixture("hints.py:" + cls) + " --check");
    EXPECT_EQ(i.code, 3) << cls << ": " << i.output;
    EXPECT_TRUE(contains(i.output, says)) << i.output;
  }
  const Outcome shown = lrahost("inspect " + fixture("hints.py:Hinted") + " --check");
  EXPECT_EQ(shown.code, 0) << shown.output;
  EXPECT_TRUE(contains(shown.output, "optimizer hints  2 tensor(s), 128 numbers: no weight decay, learning rate x"))
      << shown.output;
  EXPECT_TRUE(contains(shown.output, "summary          after_last: the mixer does not read ahead")) << shown.output;
}

// ---- 2. faults: one message and exit code each ------------------------------------

struct Fault {
  const char* name;
  std::string spec;
  int code;
  std::vector<std::string> says;  // each in the error line (a regex when it starts with '^')
  bool at_load = true;            // refused when the class is opened (inspect sees it too)
  int check_code = -1;            // else: inspect --check's exit code (-1: the run's)
};

// ctest names the case, not the struct's bytes.
void PrintTo(const Fault& f, std::ostream* os) { *os << f.name; }

class PythonFaults : public PythonCli, public ::testing::WithParamInterface<Fault> {};

TEST_P(PythonFaults, RunAndInspectNameTheFaultWithItsExitCode) {
  const Fault f = GetParam();
  const fs::path out = dir_->path() / (std::string("fault-") + f.name);
  const Outcome o = lrahost(tiny(f.spec, out));
  EXPECT_EQ(o.code, f.code) << o.output;
  const auto at = o.output.find("lrahost: error: ");
  ASSERT_NE(at, std::string::npos) << o.output;
  const std::string line = o.output.substr(at, o.output.find('\n', at) - at);
  for (const auto& s : f.says) {
    if (s[0] == '^')
      EXPECT_TRUE(std::regex_search(line, std::regex(s.substr(1)))) << s << "\n" << line;
    else
      EXPECT_TRUE(contains(line, s)) << s << "\n" << line;
  }
  EXPECT_FALSE(fs::exists(out / "result.json"));
  if (!f.at_load) {
    // Faults of the class's code: inspect --check builds and runs it.
    const Outcome c = lrahost("inspect --check '" + f.spec + "'");
    EXPECT_EQ(c.code, f.check_code < 0 ? f.code : f.check_code) << c.output;
    return;
  }
  EXPECT_FALSE(fs::exists(out)) << "refused before the run directory is made";
  const Outcome i = lrahost("inspect '" + f.spec + "'");
  EXPECT_EQ(i.code, f.code) << i.output;
  for (const auto& s : f.says)
    if (s[0] != '^') EXPECT_TRUE(contains(i.output, s)) << s << "\n" << i.output;
}

INSTANTIATE_TEST_SUITE_P(
    Files, PythonFaults,
    ::testing::Values(
        Fault{"init_raises", fixture("faults.py:InitRaises"), 3,
              {"^plugin 'InitRaises' could not build its mixer: \\S*faults\\.py:[0-9]+ \\(in __init__\\): "
               "InitRaises\\.__init__ raised ValueError: deliberate failure in __init__",
               "last frames: "},
              false},
        Fault{"forward_raises", fixture("faults.py:ForwardRaises"), 3,
              {"^plugin 'ForwardRaises' failed in forward at step 1 \\(training\\): \\S*faults\\.py:[0-9]+ \\(in "
               "forward\\): ForwardRaises\\.forward raised RuntimeError: deliberate failure in forward",
               "raise RuntimeError(\"deliberate failure in forward\")"},
              false, /*check_code=*/0},  // it fails in training only: the checks run in evaluation mode
        Fault{"backward_raises", fixture("faults.py:BackwardRaises"), 3,
              {"plugin 'BackwardRaises' failed in backward at step 1 (training): deliberate failure in backward"},
              false, /*check_code=*/0},  // the checks run no backward pass
        Fault{"syntax_error", fixture("syntax_error.py:Broken"), 3,
              {"syntax_error.py:5: syntax error: expected ':'", "def forward(self, x, mask)"}},
        Fault{"missing_module", fixture("missing_module.py:Mixer"), 3,
              {"missing_module.py:2 (in <module>): imports module 'lra_no_such_module_for_tests'"}},
        Fault{"returns_tuple", fixture("faults.py:ReturnsTuple"), 3,
              {"plugin 'ReturnsTuple' failed in forward during conformance check",
               "ReturnsTuple.forward returned a tuple, not a torch.Tensor [B, L, D]"},
              false},
        Fault{"wrong_shape", fixture("faults.py:WrongShape"), 3,
              {"plugin 'WrongShape' failed in forward during conformance check",
               "WrongShape.forward returned shape [2, 48, 32] for x of shape [2, 49, 32]"},
              false},
        Fault{"missing_class", fixture("faults.py:Missing"), 3,
              {"faults.py defines no class 'Missing' (its torch.nn.Module classes: BackwardRaises, "
               "BadOptionType, Base, ForwardRaises, InitRaises, PeeksFuture, ReplacesParameter, ReturnsTuple, "
               "UnknownCapability, WrongShape)"}},
        Fault{"bad_option_type", fixture("faults.py:BadOptionType"), 3,
              {"faults.py:BadOptionType.lra_options['window'] = [64, 128] is a list: an option's default must be a "
               "bool, int, float or str"}},
        Fault{"unknown_capability", fixture("faults.py:UnknownCapability"), 3,
              {"faults.py:UnknownCapability.lra_capabilities: unknown capability 'telepathy' (known: causal, "
               "attention_probs, padding_mask, rotary, graph_safe)"}},
        Fault{"changes_default_dtype", fixture("default_dtype.py:Mixer"), 3,
              {"default_dtype.py changed torch's default dtype (torch.set_default_dtype(torch.float64))"}},
        Fault{"no_class", fixture("faults.py:"), 2, {"names a Python file but no class"}},
        Fault{"bad_class_character", fixture("faults.py:Bad-Name"), 2, {"'Bad-Name' is not a Python class name"}},
        Fault{"missing_file", fixture("no_such_file.py:Mixer"), 2, {"no_such_file.py is not a readable file"}}),
    [](const ::testing::TestParamInfo<Fault>& p) { return std::string(p.param.name); });

// An exception in forward during training: the run's log ends with the error,
// which carries the traceback's last frames.
TEST_F(PythonCli, AForwardExceptionEndsRunLogWithTheTracebacksLastFrames) {
  const fs::path out = dir_->path() / "forward-log";
  const Outcome o = lrahost(tiny(fixture("faults.py:ForwardRaises"), out));
  ASSERT_EQ(o.code, 3) << o.output;
  const std::string last = last_line(out / "run.log");
  EXPECT_TRUE(contains(last, "lrahost: error: plugin 'ForwardRaises' failed in forward at step 1 (training)")) << last;
  EXPECT_TRUE(std::regex_search(last, std::regex("last frames: .*faults\\.py:[0-9]+ in forward: raise "
                                                 "RuntimeError\\(\"deliberate failure in forward\"\\)")))
      << last;
}

// ---- 2/3. conformance: inspect --check and run ----------------------------------------

TEST_F(PythonCli, InspectCheckRunsTheConformanceChecksOnAPythonMixer) {
  const Outcome i = lrahost("inspect --check " + kExample);
  ASSERT_EQ(i.code, 0) << i.output;
  EXPECT_TRUE(contains(i.output, "name          SoftmaxAttention py-")) << i.output;
  EXPECT_TRUE(contains(i.output, "capabilities  causal, attention_probs, padding_mask, rotary")) << i.output;
  EXPECT_TRUE(contains(i.output, "softmax_attention.py ")) << "its sources with their hashes\n" << i.output;
  EXPECT_TRUE(contains(i.output, "conformance checks passed: shape, finite, deterministic, padding_mask, causal, "
                                 "attention_probs"))
      << i.output;
}

TEST_F(PythonCli, AMixerThatDeclaresCausalButReadsTheFutureIsCaughtByInspectAndRun) {
  const std::string spec = fixture("faults.py:PeeksFuture");
  const Outcome i = lrahost("inspect --check " + spec);
  EXPECT_EQ(i.code, 3) << i.output;
  EXPECT_TRUE(contains(i.output, "padding_mask     passed")) << "honest about padding\n" << i.output;
  EXPECT_TRUE(contains(i.output, "plugin 'PeeksFuture' failed the conformance check 'causal'")) << i.output;

  const fs::path out = dir_->path() / "peeks";
  const Outcome r = lrahost(tiny(spec, out));
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_TRUE(contains(r.output, "plugin 'PeeksFuture' failed the conformance check 'causal'")) << r.output;
  EXPECT_TRUE(contains(r.output, "changed by up to")) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "refused before training, leaving no run directory";
}

// ---- 4. Ctrl-C ---------------------------------------------------------------------

// The run's exit status as a shell reports it (128 + signal when killed).
int shell_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Starts a long tiny run, waits for its first checkpoint (mid-training), sends SIGINT.
int interrupted(const std::string& plugin, const fs::path& out, double* seconds) {
  const std::string args = PythonCli::tiny(plugin, out) +
                           " --set train.steps=100000 --set train.eval_every=100000 --set train.checkpoint_every=5";
  const pid_t pid = spawn_lrahost(args, out.string() + ".log");
  if (pid <= 0) return -1;
  const auto deadline = Clock::now() + std::chrono::minutes(2);
  while (!fs::exists(out / "checkpoints" / "step-5") && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step-5")) << read_text(out.string() + ".log");
  const auto sent = Clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  *seconds = std::chrono::duration<double>(Clock::now() - sent).count();
  return shell_status(status);
}

TEST_F(PythonCli, CtrlCStopsAPythonMixersRunWithExit130LikeACppPlugins) {
  double cpp_s = 0, py_s = 0;
  const int cpp = interrupted("transformer", dir_->path() / "sigint-cpp", &cpp_s);
  const int py = interrupted(kExample, dir_->path() / "sigint-py", &py_s);
  EXPECT_EQ(cpp, 130);
  EXPECT_EQ(py, 130) << read_text(dir_->path() / "sigint-py.log");
  EXPECT_LT(py_s, 10.0) << "stopped promptly";
  EXPECT_FALSE(fs::exists(dir_->path() / "sigint-py" / "result.json"));
}

// ---- 5. kill -9 and --resume -----------------------------------------------------------

nlohmann::json result(const fs::path& dir) { return nlohmann::json::parse(read_text(dir / "result.json")); }

TEST_F(PythonCli, KilledAndResumedEqualsUninterrupted) {
  // Dropout on: the resumed run must also restore the generators Python's dropout draws from.
  const auto args = [](const fs::path& out) {
    return tiny(kExample, out) +
           " --set train.steps=400 --set train.eval_every=200 --set train.checkpoint_every=10"
           " --set model.dropout=0.1 --set model.attention_dropout=0.1";
  };
  const fs::path whole = dir_->path() / "whole", killed = dir_->path() / "killed";
  const Outcome full = lrahost(args(whole));
  ASSERT_EQ(full.code, 0) << full.output;

  const pid_t pid = spawn_lrahost(args(killed), dir_->path() / "killed.log");
  ASSERT_GT(pid, 0);
  const auto deadline = Clock::now() + std::chrono::minutes(2);
  while (!fs::exists(killed / "checkpoints" / "step-10") && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(killed / "checkpoints" / "step-10")) << read_text(dir_->path() / "killed.log");
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_FALSE(fs::exists(killed / "result.json")) << "the run finished before it could be killed";

  const Outcome resumed = lrahost(args(killed) + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "resumed from")) << resumed.output;
  const auto a = result(whole), b = result(killed);
  EXPECT_EQ(a["metrics"], b["metrics"]);
  EXPECT_EQ(a["history"], b["history"]);
  EXPECT_TRUE(b["timing"]["resumed_from"].is_string());
  EXPECT_EQ(a["model"]["sha256"], b["model"]["sha256"]) << "the same final weights";
  EXPECT_EQ(b["plugin"]["name"], "SoftmaxAttention");
  EXPECT_TRUE(b["plugin"]["source"]["files"].contains("softmax_attention.py")) << b["plugin"].dump();
}

// ---- 6. forget ----------------------------------------------------------------------------

// English-like text long enough for the smoke preset (it tests up to 256).
std::string fixture_text(size_t bytes) {
  const char* sentences[] = {"The jury said the election was conducted fairly. ",
                             "A small boat drifted slowly across the quiet harbor. ",
                             "Several committees reported their findings to the council. ",
                             "She opened the window and listened to the distant rain. ",
                             "Prices of wheat and corn rose sharply during the summer. "};
  std::string s;
  for (size_t i = 0; s.size() < bytes; ++i) s += sentences[(i * 7 + i / 5) % 5];
  return s;
}

TEST_F(PythonCli, ACausalPythonMixerMeasuresAForgettingCurve) {
  write_text(dir_->path() / "corpus.txt", fixture_text(120000));
  const fs::path out = dir_->path() / "forget";
  // A short schedule (warmup and decay first: overrides apply in order).
  const Outcome o = lrahost("forget --plugin " + kExample + " --preset smoke --corpus " +
                            (dir_->path() / "corpus.txt").string() + " --out " + out.string() +
                            " --set train.warmup=8 --set train.decay_steps=8 --set train.steps=40");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "conformance checks passed")) << o.output;
  const auto j = nlohmann::json::parse(read_text(out / "forgetting.json"));
  EXPECT_EQ(j["label"], "SoftmaxAttention");
  EXPECT_EQ(j["model"]["plugin"]["name"], "SoftmaxAttention");
  EXPECT_TRUE(j["model"]["plugin"]["source"]["files"].contains("softmax_attention.py")) << j["model"].dump();
  EXPECT_EQ(j["model"]["positions"], "rotary") << "the example rotates queries and keys itself";
  EXPECT_FALSE(j["points"].empty());
  EXPECT_TRUE(fs::exists(out / "model.pt"));
}

// inspect --check --gradients: a Python mixer's hand-written backward is
// checked against finite differences in float64; the wrong one is exit 3
// naming the check and the worst element, the right one passes.
TEST(PythonGradients, InspectCatchesAWrongBackwardAndNamesTheElement) {
  const Outcome right = lrahost("inspect --check --gradients --length 8 --d-model 16 --heads 2 --layers 1 " +
                                fixture("gradients.py:RightBackward"));
  EXPECT_EQ(right.code, 0) << right.output;
  EXPECT_TRUE(contains(right.output, "finite differences (float64)   passed")) << right.output;
  EXPECT_TRUE(contains(right.output, "float32 against float64        passed")) << right.output;
  const Outcome wrong = lrahost("inspect --check --gradients --length 8 --d-model 16 --heads 2 --layers 1 " +
                                fixture("gradients.py:WrongBackward"));
  EXPECT_EQ(wrong.code, 3) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, "failed the gradient check 'finite differences (float64)'")) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, " at x[") || contains(wrong.output, " at proj.weight[")) << wrong.output;
  // Without --gradients nothing checks the backward: the same class passes inspect --check.
  EXPECT_EQ(lrahost("inspect --check --length 8 --d-model 16 --heads 2 --layers 1 " +
                    fixture("gradients.py:WrongBackward")).code, 0);
}

}  // namespace
}  // namespace lra::test
