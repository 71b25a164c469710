// A complete, valid result.json as lrahost run writes it (unsealed), for the
// leaderboard's tests: open ("preset smoke") unless `closed` (then under the
// fake official manifest "official TASK" those tests' OfficialLookup knows).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "results/result.h"

namespace lra::test {

using lra::host::kResultSchema;
using lra::host::sha256_hex;

inline nlohmann::json leaderboard_result(const std::string& plugin, const std::string& task, int64_t seed, double test,
                                         double val, bool closed) {
  using nlohmann::json;
  return json{{"schema", kResultSchema},
              {"division", closed ? "closed" : "open"},
              {"division_reasons", closed ? json::array() : json::array({"preset smoke"})},
              {"valid", true},
              {"invalid_reasons", json::array()},
              {"host", {{"version", "0.1.0"}, {"git_revision", "abc"}, {"git_dirty", false}}},
              {"system", {{"os", "test"}}},
              {"plugin",
               {{"name", plugin},
                {"version", "1.0.0"},
                {"sha256", sha256_hex("plugin " + plugin)},
                {"options", json::object()},
                {"params", {{"total", 1000}, {"mixer", 100}}},
                {"capabilities", json::array()}}},
              {"task",
               {{"name", task},
                {"manifest", "builtin:lra-v1/" + task + ".toml"},
                {"manifest_sha256", closed ? sha256_hex("official " + task) : sha256_hex("smoke " + task)},
                {"preset", closed ? "official" : "smoke"},
                {"data_fingerprint", sha256_hex("data")},
                {"examples", {{"train", 100}, {"val", 10}, {"test", 1000}}}}},
              {"rules", {{"reference_params", 1000}, {"param_budget_ratio", 1.1}, {"param_budget", 1100}}},
              {"seed", seed},
              {"overrides", json::array()},
              {"config", json::object()},
              {"metrics",
               {{"test_accuracy", test},
                {"best_val_accuracy", val},
                {"final_train_loss", 1.0},
                {"final_train_accuracy", test}}},
              {"history", json::array()},
              {"timing", json::object()},
              {"command_line", json::array()},
              {"started_at", "2025-01-01T00:00:00Z"},
              {"finished_at", "2025-01-01T00:01:00Z"}};
}

}  // namespace lra::test
