// Issue 31, "no flooding", through the command line: `submit` keeps runs
// apart (one run per task and seed, named by its task), and `verify
// --reevaluate` refuses a result's data parameters before generating any data.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTiny = "--plugin transformer --preset smoke --set train.steps=2 --set train.eval_every=2 --threads 2";

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

class FloodingCli : public ::testing::Test {
 protected:
  fs::path run(const std::string& name, const std::string& extra = "") {
    const fs::path out = d_.path() / name;
    const auto o = lrahost("run --task listops " + kTiny + " --out " + out.string() + " " + extra);
    EXPECT_EQ(o.code, 0) << o.output;
    return out;
  }
  TempDir d_;
};

TEST_F(FloodingCli, SubmitRefusesARunAndASuiteRunOfTheSameTaskAndSeed) {
  const fs::path single = run("listops-run");
  const fs::path suite = d_.path() / "suite";
  const auto s = lrahost("suite --tasks listops " + kTiny + " --out " + suite.string());
  ASSERT_EQ(s.code, 0) << s.output;
  const fs::path suite_run = suite / "runs" / "listops" / "seed-0";
  ASSERT_TRUE(fs::exists(suite_run / "result.json"));
  // The leaderboard refuses the pair (exit 5) ...
  const auto lb = lrahost("leaderboard " + single.string() + " " + suite_run.string() + " --out " +
                          (d_.path() / "site").string());
  EXPECT_EQ(lb.code, 5) << lb.output;
  // ... so submit refuses it up front, by the same rule, naming both run folders, and writes nothing.
  const fs::path bundle = d_.path() / "sub.tar";
  const auto sub = lrahost("submit " + single.string() + " " + suite.string() + " --out " + bundle.string());
  EXPECT_EQ(sub.code, 2) << sub.output;
  EXPECT_NE(sub.output.find("cannot submit one run twice"), std::string::npos) << sub.output;
  EXPECT_NE(sub.output.find(single.string()), std::string::npos) << sub.output;
  EXPECT_NE(sub.output.find(suite_run.string()), std::string::npos) << sub.output;
  EXPECT_NE(sub.output.find("both seed 0 of transformer on listops"), std::string::npos) << sub.output;
  EXPECT_FALSE(fs::exists(bundle));
  // A copy of one run under another folder is the same run too.
  fs::copy(single, d_.path() / "copy", fs::copy_options::recursive);
  const auto copy = lrahost("submit " + single.string() + " " + (d_.path() / "copy").string() + " --out " +
                            bundle.string());
  EXPECT_EQ(copy.code, 2) << copy.output;
  EXPECT_NE(copy.output.find("are the same run (result digest"), std::string::npos) << copy.output;
  EXPECT_FALSE(fs::exists(bundle));
}

TEST_F(FloodingCli, SubmitNamesEachRunByItsTaskAndSeed) {
  // A suite's folders are all "seed-S": inside the bundle the task stays visible.
  const fs::path suite = d_.path() / "suite";
  const auto s = lrahost("suite --tasks listops --seeds 0,1 " + kTiny + " --out " + suite.string());
  ASSERT_EQ(s.code, 0) << s.output;
  const fs::path bundle = d_.path() / "sub.tar";
  const auto sub = lrahost("submit " + suite.string() + " --out " + bundle.string());
  ASSERT_EQ(sub.code, 0) << sub.output;
  EXPECT_NE(sub.output.find("2 runs, 1 plugin in 1 file"), std::string::npos) << sub.output;
  EXPECT_NE(sub.output.find("  listops-seed-0: transformer on listops, seed 0, open"), std::string::npos) << sub.output;
  EXPECT_NE(sub.output.find("  listops-seed-1: transformer on listops, seed 1, open"), std::string::npos) << sub.output;
}

TEST_F(FloodingCli, ReevaluateRefusesTwoBillionExamplesBeforeGeneratingAnything) {
  if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  const fs::path r = run("listops-run");
  // The submitter asks the verifier for 2e9 ListOps examples and re-seals the (open) result.
  json result = json::parse(read_text(r / "result.json"));
  result["task"]["data_params"]["train_size"] = 2000000000;
  result.erase("digest");
  result.erase("signature");
  lra::host::write_result(r, lra::host::seal(result));
  const fs::path bundle = d_.path() / "sub.tar";
  const auto sub = lrahost("submit " + r.string() + " --out " + bundle.string());
  ASSERT_EQ(sub.code, 0) << sub.output;
  const fs::path data = d_.path() / "verifier-data";
  const auto v = lrahost("verify --reevaluate " + bundle.string() + " --threads 2 --data-dir " + data.string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("task.data_params.train_size = 2000000000 is above the cap of 96000"), std::string::npos)
      << v.output;
  EXPECT_NE(v.output.find("nothing was generated or loaded for it"), std::string::npos) << v.output;
  EXPECT_FALSE(fs::exists(data)) << "data were generated for a refused result";
}

}  // namespace
}  // namespace lra::test
