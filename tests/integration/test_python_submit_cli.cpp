// Issue 28: a Python mixer (FILE.py:CLASS) through submit and re-evaluation.
// submit bundles the class's file and the modules it imported from its own
// folder as plugins/<sha256>/<path>; verify --reevaluate stages them into
// the sandbox and opens them in the confined mixer process (issue 43);
// plain verify checks the recorded hashes against the files when they are
// there. Each attack (an edited source, a name escaping its folder, a source
// changed since the run) beside the honest path it departs from.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "common/sha256.h"
#include "reevaluation/bundle.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

// A small attention written in PyTorch that imports a helper of its own
// folder: both files are recorded, bundled and staged.
const char* kMixer = R"(import torch

from helper import inv_sqrt
EXTRA_IMPORT


class TinyAttention(torch.nn.Module):
    lra_capabilities = {"padding_mask"}

    def __init__(self, d_model, heads, qkv_dim, **spec):
        super().__init__()
        self.qkv = torch.nn.Linear(d_model, 3 * qkv_dim, bias=False)
        self.o = torch.nn.Linear(qkv_dim, d_model, bias=False)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        logits = torch.matmul(q, k.transpose(-2, -1)) * inv_sqrt(q.shape[-1])
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None, :], -1e9)
        return self.o(torch.matmul(torch.softmax(logits, dim=-1), v))
)";

const char* kHelper = R"(import math


def inv_sqrt(n):
    return 1.0 / math.sqrt(n)
)";

const std::string kFewSteps =
    " --set train.steps=20 --set train.eval_every=20 --set train.warmup=2 --set data.test_size=100";

class PythonSubmitCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
    if (!fs::exists(fs::path(LRA_PLUGIN_DIR) / "lra_mixer_python.so"))
      GTEST_SKIP() << "no Python plugin in this build (python3-dev, pybind11-dev, python3-torch)";
  }
  // The mixer's folder; `extra_import` a line added to its imports.
  fs::path write_mixer(const std::string& name, const std::string& extra_import = "") {
    const fs::path dir = d_.path() / "src" / name;
    std::string code = kMixer;
    code.replace(code.find("EXTRA_IMPORT"), 12, extra_import);
    write_text(dir / "mixer.py", code);
    write_text(dir / "helper.py", kHelper);
    return dir;
  }
  fs::path train(const fs::path& src, const std::string& name, const std::string& env = "") {
    const fs::path out = d_.path() / "runs" / name;
    const auto o = lrahost("run --plugin " + (src / "mixer.py").string() + ":TinyAttention --task listops --preset "
                           "smoke --threads 2 --seed 0 --data-dir " + data() + " --out " + out.string() + kFewSteps,
                           env);
    EXPECT_EQ(o.code, 0) << o.output;
    return out;
  }
  std::string data() const { return (d_.path() / "data").string(); }
  Outcome submit(const fs::path& run, const fs::path& bundle) {
    return lrahost("submit " + run.string() + " --out " + bundle.string());
  }
  Outcome reevaluate(const fs::path& bundle, const fs::path& out) {
    return lrahost("verify --reevaluate " + bundle.string() + " --out " + out.string() + " --threads 2 --data-dir " +
                   data());
  }
  // The bundle's entries, as a folder (tar -x) and as bundle.json.
  fs::path unpack(const fs::path& bundle, const std::string& name) {
    const fs::path dir = d_.path() / name;
    fs::create_directories(dir);
    EXPECT_EQ(std::system(("tar -xf " + bundle.string() + " -C " + dir.string()).c_str()), 0);
    return dir;
  }
  // Packs `dir` again with `index`, listing each of its files with its bytes' SHA-256 and size.
  void repack(const fs::path& dir, json index, const fs::path& out) {
    std::vector<lra::host::BundleFile> files;
    index["files"] = json::object();
    index["sizes"] = json::object();
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().filename() == "bundle.json") continue;
      const std::string name = fs::relative(e.path(), dir).string();
      files.push_back({name, e.path()});
    }
    for (const auto& f : files) {
      index["files"][f.name] = lra::host::sha256_file(f.source);
      index["sizes"][f.name] = static_cast<int64_t>(fs::file_size(f.source));
    }
    lra::host::write_bundle(out, index, files);
  }
  TempDir d_;
};

TEST_F(PythonSubmitCli, AnHonestPythonMixerIsBundledAndReevaluatesValidInTheSandbox) {
  const fs::path src = write_mixer("honest");
  const fs::path run = train(src, "py");
  const json result = json::parse(read_text(run / "result.json"));
  const json files = result["plugin"]["source"]["files"];
  ASSERT_EQ(files.size(), 2u) << result["plugin"].dump(2);
  const std::string sha = result["plugin"]["sha256"].get<std::string>();
  auto plain = lrahost("verify " + run.string());
  EXPECT_EQ(plain.code, 0) << plain.output;

  const fs::path bundle = d_.path() / "py.tar";
  auto s = submit(run, bundle);
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("1 run, 1 plugin in 2 files"), std::string::npos) << "the files it packs: " << s.output;
  const fs::path unpacked = unpack(bundle, "unpacked");
  EXPECT_EQ(read_text(unpacked / "plugins" / sha / "mixer.py"), read_text(src / "mixer.py"));
  EXPECT_EQ(read_text(unpacked / "plugins" / sha / "helper.py"), kHelper);
  const json index = json::parse(read_text(unpacked / "bundle.json"));
  EXPECT_EQ(index["runs"][0]["plugin"], "plugins/" + sha + "/mixer.py:TinyAttention");

  const fs::path checked = d_.path() / "checked";
  auto v = reevaluate(bundle, checked);
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("listops-seed-0: re-evaluated, valid"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("Python mixer: plugin.sha256 is that of the 2 bundled source file(s), checked when the "
                          "bundle was unpacked"),
            std::string::npos) << v.output;
  const json rep = json::parse(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_TRUE(rep["valid"].get<bool>()) << rep.dump(2);
  EXPECT_TRUE(rep["test"]["same_device_and_precision"].get<bool>()) << rep.dump(2);
  EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), result["metrics"]["test_accuracy"].get<double>());
  // It ran in the mixer process, which saw its own tensors and the mixer inputs only.
  EXPECT_GT(rep["isolation"]["calls"].get<int64_t>(), 0) << rep.dump(2);

  // The result without its sources (another machine): verify says nothing of them.
  fs::rename(src, d_.path() / "moved");
  plain = lrahost("verify " + run.string());
  EXPECT_EQ(plain.code, 0) << plain.output;
  fs::rename(d_.path() / "moved", src);

  // A result whose recorded torch is not the verifier's: still valid, and the facts say which it recorded.
  json forged = result;
  forged["plugin"]["source"]["torch"] = "0.0.0-elsewhere";
  forged.erase("digest");
  forged.erase("signature");
  lra::host::write_result(run, lra::host::seal(forged));
  const fs::path bundle2 = d_.path() / "py2.tar";
  ASSERT_EQ(submit(run, bundle2).code, 0);
  auto v2 = reevaluate(bundle2, d_.path() / "checked2");
  EXPECT_EQ(v2.code, 0) << v2.output;
  EXPECT_NE(v2.output.find(", torch 0.0.0-elsewhere (plugin.source)"), std::string::npos) << v2.output;
}

// The SDK's example whose attention the host computes (lrahost.softmax_attention,
// a module the Python plugin provides in-process): it trains, and re-evaluates
// valid in the sandbox with its sibling module softmax_attention.py staged.
TEST_F(PythonSubmitCli, TheExampleUsingTheHostsAttentionReevaluatesValidInTheSandbox) {
  const fs::path src = d_.path() / "src" / "host";
  fs::create_directories(src);
  for (const char* f : {"host_attention.py", "softmax_attention.py"})
    fs::copy_file(fs::path(LRA_SOURCE_DIR) / "sdk" / "examples" / "python" / f, src / f);
  const fs::path run = d_.path() / "runs" / "host";
  const auto o = lrahost("run --plugin " + (src / "host_attention.py").string() + ":HostAttention --task listops "
                         "--preset smoke --threads 2 --seed 0 --data-dir " + data() + " --out " + run.string() +
                         kFewSteps);
  ASSERT_EQ(o.code, 0) << o.output;
  const json result = json::parse(read_text(run / "result.json"));
  EXPECT_EQ(result["plugin"]["source"]["files"].size(), 2u) << result["plugin"].dump(2);
  const fs::path bundle = d_.path() / "host.tar";
  auto s = submit(run, bundle);
  ASSERT_EQ(s.code, 0) << s.output;
  auto v = reevaluate(bundle, d_.path() / "checked");
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("listops-seed-0: re-evaluated, valid"), std::string::npos) << v.output;
  const json rep = json::parse(read_text(d_.path() / "checked" / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), result["metrics"]["test_accuracy"].get<double>());
}

// Issue 48: the run keeps the sources it ran (RUN/plugin-source) and is
// judged by them. Editing the working files afterwards is the author's
// business: verify stays valid and says so in a note, submit packs the copy.
// Editing the run's copy is tampering with the run: refused.
TEST_F(PythonSubmitCli, ARunIsJudgedByItsOwnCopyOfTheSources) {
  const fs::path src = write_mixer("changed");
  const fs::path run = train(src, "py");
  const fs::path copy = run / "plugin-source";
  ASSERT_EQ(read_text(copy / "mixer.py"), read_text(src / "mixer.py"));
  ASSERT_EQ(read_text(copy / "helper.py"), kHelper);
  // The working helper edited after the run: valid, with a note; the bundle carries the copy.
  write_text(src / "helper.py", std::string(kHelper) + "# tuned later\n");
  auto v = lrahost("verify " + run.string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("open, valid"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("note: the working Python source " + (src / "helper.py").string() +
                          " has changed since the run; the run is judged by its own copy in " + copy.string()),
            std::string::npos)
      << v.output;
  const fs::path bundle = d_.path() / "py.tar";
  auto s = submit(run, bundle);
  ASSERT_EQ(s.code, 0) << s.output;
  const std::string sha = json::parse(read_text(run / "result.json"))["plugin"]["sha256"].get<std::string>();
  EXPECT_EQ(read_text(unpack(bundle, "copy") / "plugins" / sha / "helper.py"), kHelper) << "the run's copy, not the edit";
  fs::remove(bundle);
  // The working files gone altogether: still judged by the copy.
  fs::remove_all(src);
  EXPECT_EQ(lrahost("verify " + run.string()).code, 0);
  // The run's own copy edited: submit refuses naming it (exit 2, no bundle), verify fails.
  write_text(copy / "helper.py", std::string(kHelper) + "# tuned later\n");
  s = submit(run, bundle);
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find("its Python source " + (copy / "helper.py").string() + " has changed since the run"),
            std::string::npos) << s.output;
  EXPECT_FALSE(fs::exists(bundle));
  v = lrahost("verify " + run.string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("the run's copy of its Python source " + (copy / "helper.py").string() +
                          " was changed after the run"),
            std::string::npos) << v.output;
  // Removed from the copy: the same, as missing.
  fs::remove(copy / "helper.py");
  s = submit(run, bundle);
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find((copy / "helper.py").string() + " (plugin.source.files) is missing"), std::string::npos)
      << s.output;
  EXPECT_EQ(lrahost("verify " + run.string()).code, 4);
  // Restored: both pass.
  write_text(copy / "helper.py", kHelper);
  EXPECT_EQ(lrahost("verify " + run.string()).code, 0);
  s = submit(run, bundle);
  EXPECT_EQ(s.code, 0) << s.output;
}

TEST_F(PythonSubmitCli, AdversarialABundleWithAnEditedSourceOrAnEscapingNameIsRefused) {
  const fs::path run = train(write_mixer("edited"), "py");
  const std::string sha = json::parse(read_text(run / "result.json"))["plugin"]["sha256"].get<std::string>();
  const fs::path bundle = d_.path() / "py.tar";
  ASSERT_EQ(submit(run, bundle).code, 0);

  // The helper edited inside the bundle, bundle.json updated to match: only the result can tell.
  const fs::path dir = unpack(bundle, "edit");
  const json index = json::parse(read_text(dir / "bundle.json"));
  write_text(dir / "plugins" / sha / "helper.py", "def inv_sqrt(n):\n    return 0.0\n");
  const fs::path edited = d_.path() / "edited.tar";
  repack(dir, index, edited);
  auto v = reevaluate(edited, d_.path() / "checked-edited");
  EXPECT_EQ(v.code, 5) << v.output;
  EXPECT_NE(v.output.find("'plugins/" + sha + "/helper.py' has SHA-256 "), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("the source was changed after the run"), std::string::npos) << v.output;
  EXPECT_FALSE(fs::exists(d_.path() / "checked-edited"));

  // An entry that climbs out of the folder, listed in bundle.json.
  const fs::path escape = d_.path() / "escape.tar";
  const std::string evil = "plugins/" + sha + "/../../escaped.py";
  {
    // The bundle as submit wrote it, plus extra.py under the escaping name.
    const fs::path pack_dir = unpack(bundle, "escape");
    write_text(pack_dir / "extra.py", "import os\n");
    std::vector<lra::host::BundleFile> files;
    json idx = index;
    for (const auto& item : index["files"].items()) files.push_back({item.key(), pack_dir / item.key()});
    files.push_back({evil, pack_dir / "extra.py"});
    idx["files"][evil] = lra::host::sha256_file(pack_dir / "extra.py");
    idx["sizes"][evil] = static_cast<int64_t>(fs::file_size(pack_dir / "extra.py"));
    lra::host::write_bundle(escape, idx, files);
  }
  auto e = reevaluate(escape, d_.path() / "out" / "checked-escape");
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("bundle.json lists '" + evil + "', which is not a file of a run it lists"),
            std::string::npos) << e.output;
  EXPECT_FALSE(fs::exists(d_.path() / "out" / "checked-escape"));
  EXPECT_FALSE(fs::exists(d_.path() / "escaped.py"));
  EXPECT_FALSE(fs::exists(d_.path() / "out" / "escaped.py"));

  // The untouched bundle still re-evaluates: the refusals were the edits'.
  auto honest = reevaluate(bundle, d_.path() / "checked");
  EXPECT_EQ(honest.code, 0) << honest.output;
}

// Issue 43, attack 4: nothing the judged code wrote is published. A module
// the verifier's Python lacks fails the class in the mixer process; the
// plugin's own message (which names the module) stays in the maintainer's
// local log, and the report says in the verifier's words what failed.
TEST_F(PythonSubmitCli, AdversarialTheMixersOwnErrorTextStaysInTheLocalLog) {
  // At training time the module comes from the researcher's PYTHONPATH, not
  // the mixer's folder: it is neither recorded nor bundled, and the
  // sandbox's clean environment does not have it.
  write_text(d_.path() / "site" / "lra_site_only_module.py", "FACTOR = 1.0\n");
  const fs::path run = train(write_mixer("site", "import lra_site_only_module"), "py",
                             "PYTHONPATH=" + (d_.path() / "site").string());
  json result = json::parse(read_text(run / "result.json"));
  EXPECT_EQ(result["plugin"]["source"]["files"].size(), 2u) << result["plugin"].dump(2);
  // Recorded under another torch too: the facts say which.
  result["plugin"]["source"]["torch"] = "0.0.0-elsewhere";
  result.erase("digest");
  result.erase("signature");
  lra::host::write_result(run, lra::host::seal(result));
  const fs::path bundle = d_.path() / "py.tar";
  ASSERT_EQ(submit(run, bundle).code, 0);
  const fs::path checked = d_.path() / "checked";
  auto v = reevaluate(bundle, checked);
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("the mixer process could not open the plugin: a plugin fault; its output is kept, "
                          "unpublished, in logs/listops-seed-0-mixer.log of --out"),
            std::string::npos) << v.output;
  EXPECT_NE(v.output.find(", torch 0.0.0-elsewhere (plugin.source)"), std::string::npos) << v.output;
  EXPECT_EQ(v.output.find("lra_site_only_module"), std::string::npos) << v.output;
  const std::string rep = read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json");
  EXPECT_FALSE(json::parse(rep)["valid"].get<bool>());
  EXPECT_EQ(rep.find("lra_site_only_module"), std::string::npos) << rep;
  // The maintainer still learns what happened.
  EXPECT_NE(read_text(checked / "logs" / "listops-seed-0-mixer.log").find("lra_site_only_module"), std::string::npos);
}

}  // namespace
}  // namespace lra::test
