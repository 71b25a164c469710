// Issue 31, point 7: hostile values in files, options and the environment,
// each refused at the boundary with the documented error kind, and the
// honest value next to it still accepted. (The CLI side: tests/integration/
// test_hostile_inputs_cli.cpp.)
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/dir_lock.h"
#include "common/json_input.h"
#include "common/out_of_memory.h"
#include "common/plugin_identity.h"
#include "common/text.h"
#include "distributed/distributed.h"
#include "lra/mixer.h"
#include "lra/status.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "model/mixer_call.h"
#include "plugins/descriptor.h"
#include "runs/child_runs.h"
#include "train/checkpoint.h"
#include "train/progress_check.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Runs fn; expects lra::Error of `kind` whose message contains every needle. Returns the message.
std::string expect_error(const std::function<void()>& fn, ErrorKind kind, const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << " in: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no lra::Error thrown";
  return {};
}

std::string json_error(const std::string& text) {
  try {
    parse_json_input(text);
  } catch (const JsonInputError& e) {
    return e.what();
  }
  return {};
}

// --- 1. duplicate JSON keys ---------------------------------------------------

TEST(HostileJson, DuplicateKeyAtTopLevelIsRefusedNamingIt) {
  const std::string why = json_error(R"({"division":"open","division":"closed"})");
  EXPECT_NE(why.find("duplicate key \"division\""), std::string::npos) << why;
  EXPECT_NE(why.find("object at /"), std::string::npos) << why;
}

TEST(HostileJson, DuplicateKeyDeepInsideArraysIsRefusedWithItsPath) {
  const std::string why = json_error(R"({"history":[{"step":1},{"step":2,"val_accuracy":0.5,"val_accuracy":0.9}]})");
  EXPECT_NE(why.find("duplicate key \"val_accuracy\""), std::string::npos) << why;
  EXPECT_NE(why.find("/history/1"), std::string::npos) << why;
}

TEST(HostileJson, DuplicateSpelledWithAnEscapeIsStillADuplicate) {
  const std::string why = json_error(R"({"division":"open","divisio\u006e":"closed"})");
  EXPECT_NE(why.find("duplicate key \"division\""), std::string::npos) << why;
}

TEST(HostileJson, MegabyteKeyIsCutInTheMessage) {
  const std::string key(1 << 20, 'k');
  const std::string why = json_error("{\"" + key + "\":1,\"" + key + "\":2}");
  EXPECT_NE(why.find("duplicate key"), std::string::npos);
  EXPECT_LT(why.size(), 1000u);
}

TEST(HostileJson, HonestDocumentsWithRepeatedKeysInDifferentObjectsParse) {
  const json j = parse_json_input(R"({"a":{"x":1},"b":{"x":2},"list":[{"x":3},{"x":4}],"x":[1,[2,{"x":5}]]})");
  EXPECT_EQ(j["b"]["x"], 2);
  EXPECT_EQ(j["list"][1]["x"], 4);
  EXPECT_EQ(j["x"][1][1]["x"], 5);
}

// --- 2. state.json progress values ---------------------------------------------

json honest_progress() {
  return {{"window_loss", 12.5},       {"window_correct", 10.0},     {"window_count", 40.0},
          {"final_train_loss", 1.9},   {"final_train_accuracy", 0.3}, {"best_val_accuracy", 0.375},
          {"best_val_step", 5},        {"history", json::array({{{"step", 5}, {"lr", 0.001}, {"train_loss", 2.1},
                                                                  {"train_accuracy", 0.2}, {"val_loss", 2.0},
                                                                  {"val_accuracy", 0.375}}})}};
}

TEST(HostileCheckpoint, HonestProgressPasses) { EXPECT_EQ(progress_problem(honest_progress(), 10), std::nullopt); }

TEST(HostileCheckpoint, OutOfRangeProgressValuesAreNamed) {
  struct Case {
    std::string pointer;
    json value;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"/best_val_accuracy", 7.0, "progress.best_val_accuracy"},
      {"/best_val_accuracy", -0.1, "progress.best_val_accuracy"},
      {"/final_train_accuracy", 1.5, "progress.final_train_accuracy"},
      {"/final_train_loss", -3.0, "progress.final_train_loss"},
      {"/final_train_loss", NAN, "progress.final_train_loss"},
      {"/window_loss", INFINITY, "progress.window_loss"},
      {"/window_count", 2.5, "progress.window_count"},
      {"/window_correct", 41.0, "progress.window_correct"},
      {"/best_val_step", 11, "progress.best_val_step"},
      {"/best_val_accuracy", "0.5", "progress.best_val_accuracy"},
      {"/history/0/val_accuracy", 7.0, "progress.history[0].val_accuracy"},
      {"/history/0/train_loss", -1.0, "progress.history[0].train_loss"},
      {"/history/0/step", 11, "progress.history[0].step"},
      {"/history/0/lr", "fast", "progress.history[0].lr"},
  };
  for (const auto& c : cases) {
    json p = honest_progress();
    p[json::json_pointer(c.pointer)] = c.value;
    const auto problem = progress_problem(p, 10);
    ASSERT_TRUE(problem.has_value()) << c.pointer << " = " << c.value.dump();
    EXPECT_EQ(problem->first, c.field) << problem->second;
  }
  json unordered = honest_progress();
  unordered["history"].push_back({{"step", 3}, {"train_loss", 1.0}});
  ASSERT_TRUE(progress_problem(unordered, 10).has_value());
  EXPECT_EQ(progress_problem(unordered, 10)->first, "progress.history[1].step");
}

TEST(HostileCheckpoint, StateJsonWithBestValidation700PercentIsRefusedNamingFileAndField) {
  const fs::path dir = fs::temp_directory_path() / ("lrahost-hostile-" + std::to_string(::getpid())) / "step-10";
  fs::create_directories(dir);
  json state = {{"step", 10}, {"identity", json::object()}, {"progress", honest_progress()}};
  std::ofstream(dir / "state.json") << state.dump();
  EXPECT_NO_THROW(check_checkpoint_state(dir, 12));
  state["progress"]["best_val_accuracy"] = 7.0;
  std::ofstream(dir / "state.json") << state.dump();
  expect_error([&] { check_checkpoint_state(dir, 12); }, ErrorKind::data,
               {(dir / "state.json").string(), "progress.best_val_accuracy", "7.0", "[0, 1]"});
  fs::remove_all(dir.parent_path());
}

// --- 3. --seeds with an empty element ---------------------------------------------

TEST(HostileOptions, SeedListWithAnEmptyElementIsAUsageErrorNamingThePosition) {
  expect_error([] { parse_seed_list("0,,1", "--seeds"); }, ErrorKind::usage, {"--seeds", "'0,,1'", "element 2"});
  expect_error([] { parse_seed_list("0,1,", "--seeds"); }, ErrorKind::usage, {"element 3"});
  expect_error([] { parse_seed_list(",0", "--seeds"); }, ErrorKind::usage, {"element 1"});
  expect_error([] { parse_seed_list("0, ,1", "--seeds"); }, ErrorKind::usage, {"element 2"});
  EXPECT_EQ(parse_seed_list("0,1,2", "--seeds"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(text::empty_list_item("a,b"), std::nullopt);
  EXPECT_EQ(text::empty_list_item(""), std::optional<std::size_t>(0));
}

// --- 4. absurd optimizer values ------------------------------------------------------

TEST(HostileManifest, FiniteButAbsurdOptimizerValuesAreRulesErrorsWithTheRange) {
  struct Case {
    std::string set, key, range;
  };
  for (const Case& c : std::vector<Case>{{"train.lr=1e308", "train.lr", "(0, 10]"},
                                         {"train.weight_decay=1e300", "train.weight_decay", "[0, 10]"},
                                         {"train.eps=1e100", "train.eps", "(0, 1]"},
                                         {"train.grad_clip=1e308", "train.grad_clip", "[0, 1e6]"},
                                         {"rules.param_budget_ratio=1e308", "rules.param_budget_ratio", "[1, 1000]"},
                                         {"train.warmup=9223372036854775807", "train.warmup", "2^30"},
                                         {"train.steps=4611686018427387904", "train.steps", "2^30"}}) {
    Manifest m = load_preset("listops", "smoke");
    expect_error([&] { apply_override(m, c.set); }, ErrorKind::rules, {c.key, c.range});
  }
  // The edges are settings, not overflows.
  Manifest m = load_preset("listops", "smoke");
  for (const std::string ok : {"train.lr=10", "train.weight_decay=10", "train.eps=1", "train.grad_clip=1000000",
                               "rules.param_budget_ratio=1000", "train.steps=1073741824"})
    EXPECT_NO_THROW(apply_override(m, ok)) << ok;
}

// --- 5. out of memory inside plugin code ------------------------------------------------

class ThrowingMixer final : public lra::Mixer {
 public:
  explicit ThrowingMixer(std::function<void()> fail) : fail_(std::move(fail)) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor&) override {
    fail_();
    return x;
  }

 private:
  std::function<void()> fail_;
};

TEST(HostileMemory, AllocationFailureInForwardIsOutOfMemoryNotAPluginFault) {
  const auto x = torch::zeros({1, 4, 8});
  ThrowingMixer bad_alloc([] { throw std::bad_alloc(); });
  expect_error([&] { guarded_forward(bad_alloc, x, {}); }, ErrorKind::memory, {"out of memory", "forward"});
  ThrowingMixer torch_alloc([] {
    TORCH_CHECK(false, "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1125899906842624 bytes.");
  });
  expect_error([&] { guarded_forward(torch_alloc, x, {}); }, ErrorKind::memory, {"can't allocate memory"});
  // A plugin's own exception stays the plugin's fault (exit 3).
  ThrowingMixer broken([] { throw std::runtime_error("deliberate"); });
  expect_error([&] { guarded_forward(broken, x, {}); }, ErrorKind::plugin, {"deliberate"});
  EXPECT_TRUE(is_out_of_memory_message(std::bad_alloc().what()));
  EXPECT_FALSE(is_out_of_memory_message("deliberate failure in create()"));
}

// --- 6. plugin identity strings ----------------------------------------------------------

lra_plugin_info record_named(const std::string& name) {
  lra_plugin_info r = {};
  r.struct_size = sizeof r;
  r.abi_major = LRA_ABI_MAJOR;
  r.abi_minor = LRA_ABI_MINOR;
  r.magic = LRA_PLUGIN_MAGIC;
  r.kind = LRA_KIND_MIXER;
  const Descriptor& h = host_descriptor();
  r.cxx11_abi = h.cxx11_abi;
  std::copy_n(h.torch_version.c_str(), h.torch_version.size(), r.torch_version);
  std::copy_n(h.stdlib.c_str(), h.stdlib.size(), r.stdlib);
  std::copy_n(name.data(), std::min(name.size(), sizeof r.name), r.name);
  std::copy_n("1.0.0", 5, r.version);
  std::copy_n("an honest mixer", 15, r.description);
  return r;
}

std::string identity_problems(const lra_plugin_info& r) {
  std::string all;
  for (const auto& p : compatibility_problems(descriptor_from_record(r, "x.so"), host_descriptor(), LRA_KIND_MIXER))
    all += p + "\n";
  return all;
}

TEST(HostileDescriptor, NamesOutsideTheAlphabetOrWithoutTheirNulAreRefusedNamingTheLimit) {
  for (const std::string& name : {std::string(64, 'A'), std::string("two words"), std::string("<b>x</b>"),
                                  std::string("evil\xe2\x80\xaename"), std::string("../x")}) {
    const std::string why = identity_problems(record_named(name));
    EXPECT_NE(why.find("plugin name"), std::string::npos) << name << ": " << why;
    EXPECT_NE(why.find("63"), std::string::npos) << why;
  }
  lra_plugin_info bad_description = record_named("fine");
  std::copy_n("line\nbreak", 10, bad_description.description);
  EXPECT_NE(identity_problems(bad_description).find("plugin description"), std::string::npos);
}

TEST(HostileDescriptor, EveryHonestNameShapePasses) {
  for (const std::string& name : {std::string("transformer"), std::string("linear_transformer"), std::string("s4d"),
                                  std::string("gated-conv.v2"), std::string(63, 'a')})
    EXPECT_EQ(identity_problems(record_named(name)), "") << name;
  EXPECT_EQ(plugin_version_problem("1.2.3-rc1+abc"), std::nullopt);
  EXPECT_NE(plugin_name_problem(std::string(10 << 20, 'n')), std::nullopt);
  EXPECT_LT(plugin_name_problem(std::string(10 << 20, 'n'))->size(), 400u);  // the message stays short
}

// --- 7. integer environment variables -------------------------------------------------------

TEST(HostileEnvironment, TooLargeIntegerIsCalledTooLargeWithTheRange) {
  const std::map<std::string, std::string> base = {{"WORLD_SIZE", "2"}, {"RANK", "0"}};
  auto with = [&](const std::string& k, const std::string& v) {
    auto env = base;
    env[k] = v;
    return env;
  };
  expect_error([&] { rank_info_from(with("LRA_DIST_TIMEOUT", "2147483648")); }, ErrorKind::usage,
               {"LRA_DIST_TIMEOUT=2147483648", "too large", "1..604800"});
  expect_error([&] { rank_info_from(with("LRA_DIST_TIMEOUT", "99999999999999999999999")); }, ErrorKind::usage,
               {"too large"});
  expect_error([&] { rank_info_from(with("LRA_DIST_TIMEOUT", "0")); }, ErrorKind::usage, {"too small", "1..604800"});
  expect_error([&] { rank_info_from(with("LRA_DIST_TIMEOUT", "5s")); }, ErrorKind::usage, {"not an integer"});
  expect_error([&] { rank_info_from(with("MASTER_PORT", "70000")); }, ErrorKind::usage, {"too large", "1..65535"});
  expect_error([&] { rank_info_from(with("WORLD_SIZE", "4294967296")); }, ErrorKind::usage,
               {"WORLD_SIZE", "too large"});
  EXPECT_EQ(rank_info_from(with("LRA_DIST_TIMEOUT", "604800")).timeout_s, 604800);
  EXPECT_EQ(rank_info_from(with("MASTER_PORT", "65535")).master_port, 65535);
}

// --- 8. output paths ----------------------------------------------------------------------------

TEST(HostileOutputPath, BlankOrBlankEdgedNamesAreUsageErrorsQuotingTheValue) {
  for (const std::string& bad : {std::string(""), std::string(" "), std::string("\t "), std::string("runs/ x"),
                                 std::string("runs/x "), std::string("runs/x /"), std::string("a\nb")})
    expect_error([&] { check_output_path_name(bad); }, ErrorKind::usage, {"--out '"});
  const std::string msg = expect_error([] { check_output_path_name(" "); }, ErrorKind::usage, {"--out ' '"});
  for (const std::string& ok : {"runs/x", "my runs/x", "./out/", "/tmp/a b"})
    EXPECT_NO_THROW(check_output_path_name(ok)) << ok;
}

}  // namespace
}  // namespace lra::host
