// Issue 31, the process slice: checkpoint pruning never deletes a folder that
// is not this run's (foreign, empty, malformed, numbered higher), nor the
// newest checkpoint; `--tasks`/`--seeds` lists with a typo are refused before
// anything is written; dropout masks are keyed by the global example index,
// so a batch split over ranks (or micro-batches) draws the masks of the whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/torch.h>

#include "lra/dropout.h"
#include "lra/status.h"
#include "runs/child_runs.h"
#include "train/checkpoint.h"

// This test executable is the host here: it offers the forward-pass record
// that lrahost exports (host/dropout_rows.cpp).
extern "C" lra_dropout_rows* lra_dropout_rows_v1(void) {
  static thread_local lra_dropout_rows rows{};
  return &rows;
}

namespace {

namespace fs = std::filesystem;
using namespace lra::host;

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "lra-procs-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// ---- checkpoint pruning ----------------------------------------------------

class Pruning : public ::testing::Test {
 protected:
  void save(int64_t step, const nlohmann::json& identity) {
    left_alone = save_checkpoint(dir.path, {step, identity, nlohmann::json::object()}, *model, opt);
  }
  bool has(int64_t step) const { return fs::exists(dir.path / "checkpoints" / ("step-" + std::to_string(step))); }

  TempDir dir;
  torch::nn::Linear model{2, 2};
  torch::optim::AdamW opt{model->parameters(), torch::optim::AdamWOptions(1e-3)};
  nlohmann::json ours = {{"seed", 0}, {"plugin", "transformer"}};
  std::vector<fs::path> left_alone;
};

TEST_F(Pruning, KeepsTheTwoNewestOfThisRun) {
  for (int64_t s : {2, 4, 6, 8}) save(s, ours);
  EXPECT_FALSE(has(2));
  EXPECT_FALSE(has(4));
  EXPECT_TRUE(has(6));
  EXPECT_TRUE(has(8));
  EXPECT_TRUE(left_alone.empty());
}

TEST_F(Pruning, ForeignHigherEmptyAndMalformedCheckpointFoldersNeverDeleteThisRunsNewest) {
  const fs::path ck = dir.path / "checkpoints";
  // Another run's complete checkpoints, numbered above and below ours.
  fs::create_directories(ck);
  for (int64_t s : {1, 5, 900}) {
    TempDir other;
    save_checkpoint(other.path, {s, {{"seed", 7}}, nlohmann::json::object()}, *model, opt);
    fs::rename(other.path / "checkpoints" / ("step-" + std::to_string(s)), ck / ("step-" + std::to_string(s)));
  }
  fs::create_directories(ck / "step-1000");                            // empty
  write(ck / "step-3" / "state.json", "{not json");                   // malformed
  for (const char* f : {"model.pt", "optimizer.pt", "rng.pt"}) write(ck / "step-3" / f, "x");
  write(ck / "step-2000" / "state.json", nlohmann::json({{"step", 2000}, {"identity", ours}}).dump());  // incomplete

  for (int64_t s : {2, 4, 6, 8}) save(s, ours);
  // Ours: the two newest; every other folder as it was.
  EXPECT_FALSE(has(2));
  EXPECT_FALSE(has(4));
  EXPECT_TRUE(has(6));
  EXPECT_TRUE(has(8));
  for (int64_t s : {1, 3, 5, 900, 1000, 2000}) EXPECT_TRUE(has(s)) << "step-" << s << " was deleted";
  EXPECT_TRUE(is_checkpoint_of(ck / "step-8", 8, ours));
  // The ones older than the newest are reported, for the caller's warning.
  std::set<std::string> reported;
  for (const auto& p : left_alone) reported.insert(p.filename().string());
  EXPECT_EQ(reported, (std::set<std::string>{"step-1", "step-3", "step-5"}));
}

TEST_F(Pruning, ALaterCheckpointOfThisRunIsNotCountedAgainstTheNewOne) {
  // A resume from step 4 (step 8 unreadable) writes step 6: the older one of
  // ours (4) stays beside it, and step 8 is overwritten when reached.
  for (int64_t s : {4, 8}) save(s, ours);
  save(6, ours);
  EXPECT_TRUE(has(4));
  EXPECT_TRUE(has(6));
  EXPECT_TRUE(has(8));
}

TEST(CheckpointOwnership, ASymlinkedFileOrAnotherIdentityIsNotThisRuns) {
  TempDir dir;
  torch::nn::Linear model{2, 2};
  torch::optim::AdamW opt{model->parameters(), torch::optim::AdamWOptions(1e-3)};
  const nlohmann::json ours = {{"seed", 0}};
  save_checkpoint(dir.path, {4, ours, nlohmann::json::object()}, *model, opt);
  const fs::path c = dir.path / "checkpoints" / "step-4";
  EXPECT_TRUE(is_checkpoint_of(c, 4, ours));
  EXPECT_FALSE(is_checkpoint_of(c, 4, {{"seed", 1}}));
  EXPECT_FALSE(is_checkpoint_of(c, 5, ours));
  fs::rename(c / "rng.pt", dir.path / "rng.pt");
  fs::create_symlink(dir.path / "rng.pt", c / "rng.pt");
  EXPECT_FALSE(is_checkpoint_of(c, 4, ours));
}

// ---- lists -----------------------------------------------------------------

void expect_usage(const std::function<void()>& f, const std::vector<std::string>& words) {
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage) << e.what();
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(Lists, AnEmptySeedItemIsRefusedNotSkipped) {
  expect_usage([] { parse_seed_list("0,,1", "--seeds"); }, {"--seeds", "'0,,1'", "empty item"});
  expect_usage([] { parse_seed_list("0,1,", "--seeds"); }, {"empty item"});
  expect_usage([] { parse_seed_list(",", "--seeds"); }, {"empty item"});
  expect_usage([] { parse_seed_list("", "--seeds"); }, {"empty item"});
  EXPECT_EQ(parse_seed_list("0,1,2", "--seeds"), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Lists, AnUnknownOrRepeatedTaskIsRefusedNamingTheKnownOnes) {
  expect_usage([] { checked_task_list("listops,nosuch", "official", "--tasks"); },
               {"--tasks", "'nosuch'", "listops", "pathx"});
  expect_usage([] { checked_task_list("listops,listops", "smoke", "--tasks"); }, {"'listops' appears twice"});
  // The forgetting manifest is forget's, not a task to run.
  expect_usage([] { checked_task_list("forgetting", "smoke", "--tasks"); }, {"'forgetting'"});
  expect_usage([] { checked_task_list("listops,", "smoke", "--tasks"); }, {"empty item"});
  EXPECT_EQ(checked_task_list("listops,image", "smoke", "--tasks"), (std::vector<std::string>{"listops", "image"}));
}

// ---- dropout ---------------------------------------------------------------

// The mask a pass holding examples [first, first + local) of a global batch
// draws, under the update's seed.
at::Tensor dropped(const at::Tensor& x, uint64_t seed, int64_t first, int64_t global, int64_t towers = 1) {
  const lra::ops::DropoutRows rows(seed, first, x.size(0) / towers, global);
  const lra::ops::DropoutTowers t(towers);
  return lra::ops::dropout(x, 0.5, true);
}

TEST(DropoutRows, ABatchOfFourEqualsItsTwoHalvesAtOffsetsZeroAndTwo) {
  // 3 x 5 elements per example: odd, so the halves split a SplitMix64 pair.
  const auto x = torch::randn({4, 3, 5});
  const auto whole = dropped(x, 42, 0, 4);
  const auto halves = torch::cat({dropped(x.narrow(0, 0, 2), 42, 0, 4), dropped(x.narrow(0, 2, 2), 42, 2, 4)});
  EXPECT_TRUE(torch::equal(whole, halves));
  // And by single examples (micro-batches of 1).
  std::vector<at::Tensor> ones;
  for (int64_t i = 0; i < 4; ++i) ones.push_back(dropped(x.narrow(0, i, 1), 42, i, 4));
  EXPECT_TRUE(torch::equal(whole, torch::cat(ones)));
  // Not a fixed mask: another seed, or the halves at the same offset, differ.
  EXPECT_FALSE(torch::equal(whole, dropped(x, 43, 0, 4)));
  EXPECT_FALSE(torch::equal(dropped(x.narrow(0, 0, 2), 42, 0, 4), dropped(x.narrow(0, 2, 2), 42, 0, 4)));
}

TEST(DropoutRows, StackedTowersSplitLikeTheirBatch) {
  // A paired model stacks [first inputs; second inputs] along dim 0.
  const auto a = torch::randn({4, 7}), b = torch::randn({4, 7});
  const auto whole = dropped(torch::cat({a, b}), 9, 0, 4, 2);
  const auto r0 = dropped(torch::cat({a.narrow(0, 0, 2), b.narrow(0, 0, 2)}), 9, 0, 4, 2);
  const auto r1 = dropped(torch::cat({a.narrow(0, 2, 2), b.narrow(0, 2, 2)}), 9, 2, 4, 2);
  EXPECT_TRUE(torch::equal(whole.narrow(0, 0, 4), torch::cat({r0.narrow(0, 0, 2), r1.narrow(0, 0, 2)})));
  EXPECT_TRUE(torch::equal(whole.narrow(0, 4, 4), torch::cat({r0.narrow(0, 2, 2), r1.narrow(0, 2, 2)})));
}

TEST(DropoutRows, EachCallOfAPassHasItsOwnSeedAndTheGeneratorIsLeftAlone) {
  const auto x = torch::ones({4, 64});
  torch::manual_seed(0);
  const auto before = at::detail::getDefaultCPUGenerator().get_state();
  at::Tensor first, second;
  {
    const lra::ops::DropoutRows rows(5, 0, 4, 4);
    first = lra::ops::dropout(x, 0.5, true);
    second = lra::ops::dropout(x, 0.5, true);
  }
  EXPECT_FALSE(torch::equal(first, second));
  EXPECT_TRUE(torch::equal(at::detail::getDefaultCPUGenerator().get_state(), before));
  {  // the same pass again: the same masks
    const lra::ops::DropoutRows rows(5, 0, 4, 4);
    EXPECT_TRUE(torch::equal(lra::ops::dropout(x, 0.5, true), first));
  }
  // Outside a pass: one draw from the generator per call, as before.
  torch::manual_seed(0);
  const auto a = lra::ops::dropout(x, 0.5, true);
  EXPECT_FALSE(torch::equal(at::detail::getDefaultCPUGenerator().get_state(), before));
  torch::manual_seed(0);
  EXPECT_TRUE(torch::equal(lra::ops::dropout(x, 0.5, true), a));
}

}  // namespace
