// [grid]: a protocol's swept axes (manifest/manifest_grid.cpp). A point of the
// grid is the protocol's own setting (--set keeps the run closed), any other
// value is an override; the file's own setting must be a point; the grid
// travels in the resolved configuration and back.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "lra/status.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"

namespace lra::host {
namespace {

// The MQAR smoke manifest without its own [grid], then `grid` as its [grid].
std::string without_grid() {
  std::string text(load_preset("mqar", "smoke").text);
  return text.substr(0, text.find("\n[grid]"));
}
std::string with_grid(const std::string& grid) { return without_grid() + "\n[grid]\n" + grid; }

std::string error_of(const std::string& text) {
  try {
    parse_manifest(text, "g.toml");
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::rules) << e.what();
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ManifestGrid, ReadsAxesInOrderAndTheirPoint) {
  const Manifest m = parse_manifest(with_grid("model.d_model = [64, 128]\ntrain.lr = [0.001, 0.003]\n"), "g.toml");
  ASSERT_EQ(m.grid.size(), 2u);
  EXPECT_EQ(m.grid[0].key, "model.d_model");
  EXPECT_EQ(m.grid[0].values, (std::vector<double>{64, 128}));
  EXPECT_EQ(m.grid[1].key, "train.lr");
  EXPECT_EQ(grid_point(m), (std::vector<std::string>{"model.d_model=64", "train.lr=0.003"}));
  ASSERT_NE(grid_axis(m, "train.lr"), nullptr);
  EXPECT_EQ(grid_axis(m, "train.steps"), nullptr);
  EXPECT_TRUE(parse_manifest(without_grid(), "s.toml").grid.empty());
}

TEST(ManifestGrid, BadGridsAreRefusedNamingTheAxis) {
  EXPECT_TRUE(contains(error_of(with_grid("model.d_model = [32, 128]\n")),
                       "model.d_model = 64 is not one of grid.model.d_model (32, 128)"));
  EXPECT_TRUE(contains(error_of(with_grid("train.seed = [0, 1]\n")), "train.seed is the trial seed"));
  EXPECT_TRUE(contains(error_of(with_grid("model.pooling = [1]\n")), "'model.pooling' is not a numeric"));
  EXPECT_TRUE(contains(error_of(with_grid("rules.param_budget_ratio = [2.0]\n")), "only numeric [model] and [train] keys"));
  EXPECT_TRUE(contains(error_of(with_grid("d_model = [64]\n")), "write each axis as a dotted key"));
  EXPECT_TRUE(contains(error_of(with_grid("model.d_model = []\n")), "grid.model.d_model is empty"));
  EXPECT_TRUE(contains(error_of(with_grid("model.d_model = [64, 64]\n")), "lists 64 twice"));
  EXPECT_TRUE(contains(error_of(with_grid("model.d_model = [64, 96.5]\n")), "is an integer"));
  EXPECT_TRUE(contains(error_of(with_grid("train.lr = [\"fast\"]\n")), "expected an array of numbers"));
  EXPECT_TRUE(contains(error_of(with_grid("model.no_such_key = [1]\n")), "is not a numeric"));
}

TEST(ManifestGrid, APointIsNotAnOverrideAndAnyOtherValueIs) {
  Manifest m = parse_manifest(with_grid("model.d_model = [64, 128]\ntrain.lr = [0.001, 0.003]\n"), "g.toml");
  EXPECT_TRUE(apply_override(m, "model.d_model=128"));
  EXPECT_TRUE(apply_override(m, "train.lr=0.001"));
  EXPECT_TRUE(m.overrides.empty());
  EXPECT_EQ(m.model.d_model, 128);
  EXPECT_EQ(grid_point(m), (std::vector<std::string>{"model.d_model=128", "train.lr=0.001"}));
  // Off the grid: an override like any other (the run is open), not refused.
  EXPECT_FALSE(apply_override(m, "train.lr=0.002"));
  EXPECT_EQ(m.overrides, std::vector<std::string>{"train.lr=0.002"});
  EXPECT_FALSE(apply_override(m, "train.steps=10"));
  EXPECT_EQ(m.overrides.size(), 2u);
}

TEST(ManifestGrid, TravelsInTheConfigurationAndBack) {
  Manifest m = parse_manifest(with_grid("model.d_model = [64, 128]\ntrain.lr = [0.001, 0.003]\n"), "g.toml");
  apply_override(m, "model.d_model=128");
  const auto j = to_json(m);
  EXPECT_EQ(j["grid"]["model.d_model"], nlohmann::json::parse("[64, 128]"));
  EXPECT_EQ(j["grid"]["train.lr"], nlohmann::json::parse("[0.001, 0.003]"));
  const Manifest back = config_manifest(j, "mqar", "result.json");
  EXPECT_EQ(to_json(back), j);
  // Without a grid the configuration has no "grid" key: older results hash as before.
  EXPECT_FALSE(to_json(parse_manifest(without_grid(), "s.toml")).contains("grid"));
  nlohmann::json bad = j;
  bad["grid"]["model.pooling"] = {1};
  EXPECT_THROW(config_manifest(bad, "mqar", "result.json"), lra::Error);
}

// qkv_dim = 0: the attention width follows d_model (what a width grid needs).
TEST(ManifestGrid, QkvDimZeroFollowsTheWidth) {
  Manifest m = load_preset("mqar", "official");
  EXPECT_EQ(m.model.qkv_dim, 0);
  EXPECT_EQ(qkv_width(m.model), 64);
  apply_override(m, "model.d_model=256");
  EXPECT_EQ(qkv_width(m.model), 256);
  EXPECT_THROW(apply_override(m, "model.qkv_dim=-1"), lra::Error);
  Manifest odd = load_preset("mqar", "official");
  EXPECT_THROW(apply_override(odd, "model.heads=3"), lra::Error);  // 64 (= d_model) is not divisible by 3
}

// The released MQAR protocol: Zoology's widths and learning rates.
TEST(ManifestGrid, ZoologyV1SweepsZoologysWidthsAndLearningRates) {
  const Manifest m = load_preset("mqar", "official");
  ASSERT_EQ(m.grid.size(), 2u);
  EXPECT_EQ(m.grid[0].values, (std::vector<double>{64, 128, 256}));
  ASSERT_EQ(m.grid[1].values.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(m.grid[1].values[i], std::pow(10.0, -3.0 + 0.5 * i), 1e-15);
}

}  // namespace
}  // namespace lra::host
