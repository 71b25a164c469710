// `lrahost bench --decode` end to end on CPU: a KV cache grows with the
// context, a recurrent state does not, a causal mixer without decoding steps
// is recomputed and marked so, a non-causal one is named as such, a Python
// mixer decodes through its own steps, and bad options fail before measuring.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

const nlohmann::json* find_point(const nlohmann::json& results, const std::string& plugin, int64_t context) {
  for (const auto& r : results)
    if (r["plugin"] == plugin && r["context"] == context) return &r;
  return nullptr;
}

// tests/fixtures/python/wrong_decode.py's class CLS as a --plugins entry.
std::string wrong_decode(const std::string& cls) {
  return std::string(LRA_SOURCE_DIR) + "/tests/fixtures/python/wrong_decode.py:" + cls;
}

// bench --decode of one plugin at one short context, written to `out`.
Outcome decode_one(const std::string& plugin, const std::filesystem::path& out) {
  return lrahost("bench --decode --plugins " + plugin + " --lengths 8 --tokens 1 --device cpu --out " + out.string());
}

TEST(BenchDecodeCli, StateGrowsOnlyForTheKvCacheAndRecomputationIsMarked) {
  TempDir d;
  const std::string retention = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention";
  auto o = lrahost("bench --decode --plugins transformer,linear_transformer,performer,linformer," + retention +
                   " --lengths 16,48 --tokens 2 --device cpu --out " + (d.path() / "dec").string());
  ASSERT_EQ(o.code, 0) << o.output;
  const auto j = nlohmann::json::parse(read_text(d.path() / "dec" / "decode.json"));
  EXPECT_EQ(j["schema"], "lrahost.bench-decode/v1");
  EXPECT_EQ(j["protocol"]["batch"], 1) << "decoding defaults to one sequence";
  const int64_t layers = j["protocol"]["layers"], width = j["protocol"]["d_model"];
  const auto& r = j["results"];
  ASSERT_EQ(r.size(), 10u);
  for (const int64_t c : {16, 48}) {
    SCOPED_TRACE("context " + std::to_string(c));
    const auto* kv = find_point(r, "transformer", c);
    ASSERT_TRUE(kv);
    EXPECT_EQ((*kv)["mode"], "state");
    // Keys and values of every position decoded (context, the warm-up token, the timed ones), every layer.
    EXPECT_EQ((*kv)["bytes_per_sequence"].get<int64_t>(), layers * 2 * (c + 1 + 2) * width * 4);
    EXPECT_GT((*kv)["tokens_per_s"].get<double>(), 0.0);
    const auto* linear = find_point(r, "linear_transformer", c);
    ASSERT_TRUE(linear);
    EXPECT_EQ((*linear)["mode"], "state");
    const auto* performer = find_point(r, "performer", c);
    ASSERT_TRUE(performer);
    EXPECT_EQ((*performer)["mode"], "recomputed");
    EXPECT_FALSE(performer->contains("prefill_s"));
    const auto* linformer = find_point(r, "linformer", c);
    ASSERT_TRUE(linformer);
    EXPECT_EQ((*linformer)["mode"], "not causal");
    const auto* python = find_point(r, "Retention", c);
    ASSERT_TRUE(python) << "a Python mixer's points are under its class name";
    EXPECT_EQ((*python)["mode"], "state") << "retention.py defines decode_start and decode_step";
  }
  // A recurrent state is the same size at any context; a KV cache is not.
  EXPECT_EQ((*find_point(r, "linear_transformer", 16))["bytes_per_sequence"],
            (*find_point(r, "linear_transformer", 48))["bytes_per_sequence"]);
  EXPECT_EQ((*find_point(r, "Retention", 16))["bytes_per_sequence"],
            (*find_point(r, "Retention", 48))["bytes_per_sequence"]);
  const std::string md = read_text(d.path() / "dec" / "decode.md");
  EXPECT_NE(md.find("| performer | recomputed | 16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| linformer | not causal: cannot decode | 16 |"), std::string::npos) << md;
  EXPECT_NE(o.output.find("decode.md"), std::string::npos) << o.output;
}

TEST(BenchDecodeCli, BadOptionsFailBeforeMeasuring) {
  TempDir d;
  const std::string out = (d.path() / "dec").string();
  auto tokens = lrahost("bench --plugins transformer --lengths 16 --tokens 2 --device cpu --out " + out);
  EXPECT_EQ(tokens.code, 2) << "--tokens needs --decode: " << tokens.output;
  auto task = lrahost("bench --decode --task listops --device cpu --out " + out);
  EXPECT_EQ(task.code, 2) << task.output;
  auto zero = lrahost("bench --decode --plugins transformer --lengths 16 --tokens 0 --device cpu --out " + out);
  EXPECT_EQ(zero.code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--tokens"), std::string::npos) << zero.output;
  auto plugin = lrahost("bench --decode --plugins transformer,no_such_mixer --lengths 16 --device cpu --out " + out);
  EXPECT_NE(plugin.code, 0) << plugin.output;
  EXPECT_NE(plugin.output.find("no_such_mixer"), std::string::npos) << plugin.output;
  EXPECT_FALSE(std::filesystem::exists(d.path() / "dec" / "decode.json"));
  ASSERT_EQ(lrahost("bench --decode --plugins local --lengths 8 --tokens 1 --device cpu --out " + out).code, 0);
  auto again = lrahost("bench --decode --plugins local --lengths 8 --tokens 1 --device cpu --out " + out);
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("already holds a decode.json"), std::string::npos) << again.output;
}

// Issue 48: a capability is a promise the host checks. Steps that drop the
// context (a C++ and a Python mixer) are refused by bench --decode before
// anything is timed or written, and by inspect --check, naming the first
// position that differs; the same Python mixer with honest steps is timed.
TEST(BenchDecodeCli, StepsThatDropTheContextAreRefusedBeforeAnyNumber) {
  for (const std::string plugin : {fixture_plugin("fixture_wrong_decode"), wrong_decode("WrongDecode")}) {
    SCOPED_TRACE(plugin);
    TempDir d;
    auto o = decode_one("transformer," + plugin, d.path() / "dec");
    EXPECT_EQ(o.code, 3) << o.output;
    EXPECT_NE(o.output.find("failed the conformance check 'decode': decode_step at position 1 differs from the "
                            "causal forward's output there"),
              std::string::npos)
        << o.output;
    EXPECT_FALSE(std::filesystem::exists(d.path() / "dec" / "decode.json")) << "no number is published";
    EXPECT_EQ(o.output.find("tokens/s"), std::string::npos) << "nothing was timed: " << o.output;
    auto i = lrahost("inspect " + plugin + " --check");
    EXPECT_EQ(i.code, 3) << i.output;
    EXPECT_NE(i.output.find("decode           failed"), std::string::npos) << i.output;
    EXPECT_NE(i.output.find("failed the conformance check 'decode': decode_step at position 1"), std::string::npos)
        << i.output;
  }
  TempDir d;
  auto right = decode_one(wrong_decode("RightDecode"), d.path() / "dec");
  ASSERT_EQ(right.code, 0) << right.output;
  EXPECT_NE(right.output.find("RightDecode: decode check passed"), std::string::npos) << right.output;
  const auto j = nlohmann::json::parse(read_text(d.path() / "dec" / "decode.json"));
  EXPECT_EQ(j["results"][0]["mode"], "state");
  auto i = lrahost("inspect " + wrong_decode("RightDecode") + " --check");
  EXPECT_EQ(i.code, 0) << i.output;
  EXPECT_NE(i.output.find("decode           passed"), std::string::npos) << i.output;
}

// SDK 1.6: a parallel prefill is a promise too. One that returns the right
// rows but leaves the state empty is refused before anything is timed,
// naming the first step after it that differs; an honest one is timed as
// "parallel".
TEST(BenchDecodeCli, APrefillThatDropsThePromptIsRefusedBeforeAnyNumber) {
  TempDir d;
  auto o = decode_one(wrong_decode("WrongPrefill"), d.path() / "dec");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("decode_step at position 12 differs from the causal forward's output there"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("the prefilled state is not the steps' state"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(d.path() / "dec" / "decode.json")) << "no number is published";
  auto right = decode_one(wrong_decode("RightPrefill"), d.path() / "ok");
  ASSERT_EQ(right.code, 0) << right.output;
  const auto j = nlohmann::json::parse(read_text(d.path() / "ok" / "decode.json"));
  EXPECT_EQ(j["results"][0]["prefill_mode"], "parallel");
}

// A mixer that keeps its context in the object and hands back a state of one
// number would be measured at 4 bytes: refused, its state being no value.
TEST(BenchDecodeCli, AStateThatIsNotAllTheMixerKeepsIsRefused) {
  TempDir d;
  auto o = decode_one(wrong_decode("HiddenState"), d.path() / "dec");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("decode_step from a copy of the state at position 12, on other inputs"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("no context in the mixer object or elsewhere"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(d.path() / "dec" / "decode.json")) << "no number is published";
}

// A block-local cache empties at every block's start: its size is its fullest, one block,
// wherever the context happens to end within a block (local's block_size 50).
TEST(BenchDecodeCli, ABlockLocalStateIsMeasuredAtItsFullest) {
  TempDir d;
  const std::string out = (d.path() / "dec").string();
  auto o = lrahost("bench --decode --plugins local --lengths 120,160 --tokens 1 --device cpu --out " + out);
  ASSERT_EQ(o.code, 0) << o.output;
  const auto r = nlohmann::json::parse(read_text(d.path() / "dec" / "decode.json"))["results"];
  const auto* a = find_point(r, "local", 120);
  const auto* b = find_point(r, "local", 160);
  ASSERT_TRUE(a && b) << r.dump();
  // 6 layers x (keys, values) x 50 positions x 384 wide x 4 bytes.
  EXPECT_EQ((*a)["bytes_per_sequence"].get<int64_t>(), 6 * 2 * 50 * 384 * 4);
  EXPECT_EQ((*b)["bytes_per_sequence"], (*a)["bytes_per_sequence"]);
}

}  // namespace
}  // namespace lra::test
