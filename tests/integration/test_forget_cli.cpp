// `lrahost forget` end to end: a real small LM trained on CPU produces a
// valid curve; TorchScript models; --compare of our files and of the
// reference tool's (the published Llama-3 curve); every bad input has its
// exit code, a message naming the problem, and no partial output.
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path llama3() { return fs::path(LRA_SOURCE_DIR) / "tests/fixtures/forgetting/Meta-Llama-3-8B.json"; }

// English-like text long enough for the smoke preset (which tests up to 256).
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

json read_json(const fs::path& p) { return json::parse(read_text(p)); }

// One smoke run shared by the tests that only read its outputs.
class ForgetSmoke : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    write_text(dir_->path() / "corpus.txt", fixture_text(120000));
    outcome_ = new Outcome(lrahost("forget --plugin transformer --preset smoke --corpus " +
                                   (dir_->path() / "corpus.txt").string() + " --out " + (dir_->path() / "run").string()));
  }
  static void TearDownTestSuite() {
    delete outcome_;
    delete dir_;
  }
  static TempDir* dir_;
  static Outcome* outcome_;
};
TempDir* ForgetSmoke::dir_ = nullptr;
Outcome* ForgetSmoke::outcome_ = nullptr;

TEST_F(ForgetSmoke, TrainsAndWritesAValidCurve) {
  ASSERT_EQ(outcome_->code, 0) << outcome_->output;
  EXPECT_NE(outcome_->output.find("fine-grained memory length"), std::string::npos);
  EXPECT_NE(outcome_->output.find("prefix rule"), std::string::npos) << outcome_->output;
  const auto run = dir_->path() / "run";
  const json j = read_json(run / "forgetting.json");
  EXPECT_EQ(j["schema"], "lrahost.forgetting/v1");
  EXPECT_EQ(j["label"], "transformer");
  EXPECT_EQ(j["division"], "open");  // the smoke preset is never closed
  EXPECT_EQ(j["configuration"]["train_length"], 128);
  EXPECT_EQ(j["configuration"]["lengths"].size(), 8u);
  ASSERT_EQ(j["points"].size(), 8u);
  EXPECT_TRUE(j["complete"].get<bool>());
  for (const auto& p : j["points"]) {
    ASSERT_EQ(p["copy_accs"].size(), 4u);
    ASSERT_EQ(p["lm_accs"].size(), 4u);
    for (const char* k : {"copy_mean", "lm_mean"}) {
      EXPECT_GE(p[k].get<double>(), 0.0);
      EXPECT_LE(p[k].get<double>(), 1.0);
    }
    EXPECT_GE(p["p_value"].get<double>(), 0.0);
    EXPECT_LE(p["p_value"].get<double>(), 1.0);
  }
  // The live causal checks ran on every step's draw and passed (docs/forgetting.md#live-conformance-checks).
  const json& live = j["conformance"]["live_causal"];
  EXPECT_EQ(live["training"]["calls"], 300);
  EXPECT_EQ(live["measurement"]["calls"], 8);
  for (const char* phase : {"training", "measurement"})
    EXPECT_LT(live[phase]["max_difference_over_tolerance"].get<double>(), 1.0) << phase;
  // A model that trained learned something: its LM accuracy beats chance (1/258) clearly.
  EXPECT_GT(j["points"].back()["lm_mean"].get<double>(), 0.1);
  const auto max_len = j["configuration"]["max_length"].get<int64_t>();
  EXPECT_LE(j["fine_length"].get<int64_t>(), max_len);
  EXPECT_LE(j["coarse_length"].get<int64_t>(), max_len);
  // Both rules are recorded; the prefix value is one that holds, so never above the headline.
  for (const char* rule : {"fine_length", "coarse_length"}) {
    const std::string prefix = std::string(rule) + "_prefix";
    ASSERT_TRUE(j.contains(prefix)) << prefix;
    ASSERT_TRUE(j[prefix + "_censored"].is_boolean()) << prefix;
    EXPECT_LE(j[prefix].get<int64_t>(), j[rule].get<int64_t>()) << rule;
  }
  // The LM trained on the bytes with bos (256) before each document: one document here, so
  // one more token than bytes in training; the held-out part is the document's tail (none).
  const json& corpus = j["corpus"];
  EXPECT_EQ(corpus["train_documents"], 1);
  EXPECT_EQ(corpus["train_tokens"].get<int64_t>(), corpus["train_bytes"].get<int64_t>() + 1);
  EXPECT_EQ(corpus["held_out_tokens"].get<int64_t>(), corpus["test_bytes"].get<int64_t>());
  EXPECT_NE(corpus["tokenization"].get<std::string>().find("bos (256) before each document"), std::string::npos);
  EXPECT_EQ(j["corpus"]["name"], "corpus.txt");
  EXPECT_EQ(j["corpus"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(j["model"]["params"]["total"].get<int64_t>(), 0);
  EXPECT_LT(j["model"]["training"]["test_loss"].get<double>(), std::log(258.0));
  const std::string svg = read_text(run / "forgetting.svg");
  EXPECT_EQ(svg.rfind("<svg", 0) == 0 || svg.rfind("<?xml", 0) == 0, true);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_TRUE(fs::exists(run / "model.pt"));
  EXPECT_TRUE(fs::exists(run / "run.log"));
}

TEST_F(ForgetSmoke, TheSameRunTwiceGivesTheSameCurve) {
  ASSERT_EQ(outcome_->code, 0) << outcome_->output;
  auto again = lrahost("forget --plugin transformer --preset smoke --corpus " + (dir_->path() / "corpus.txt").string() +
                       " --out " + (dir_->path() / "again").string());
  ASSERT_EQ(again.code, 0) << again.output;
  const json a = read_json(dir_->path() / "run" / "forgetting.json");
  const json b = read_json(dir_->path() / "again" / "forgetting.json");
  // Same seed, same machine, same threads: training and sampling repeat exactly.
  EXPECT_EQ(a["points"], b["points"]);
  EXPECT_EQ(a["model"]["training"]["test_loss"], b["model"]["training"]["test_loss"]);
}

TEST_F(ForgetSmoke, CompareOverlaysCurvesAndRejectsBadFiles) {
  ASSERT_EQ(outcome_->code, 0) << outcome_->output;
  const auto run = dir_->path() / "run" / "forgetting.json";
  auto ok = lrahost("forget --compare " + run.string() + " " + run.string() + " --out " + (dir_->path() / "cmp").string());
  ASSERT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("transformer"), std::string::npos);
  EXPECT_NE(read_text(dir_->path() / "cmp" / "compare.svg").find("</svg>"), std::string::npos);

  // Our curve beside the reference tool's published one.
  auto mixed = lrahost("forget --compare " + run.string() + " " + llama3().string() + " --out " +
                       (dir_->path() / "mixed").string());
  ASSERT_EQ(mixed.code, 0) << mixed.output;
  EXPECT_TRUE(std::regex_search(mixed.output, std::regex(R"(\ntransformer +(> )?\d+( n\.s\.)? +(> )?\d+( n\.s\.)? +(> )?\d+( n\.s\.)? +(> )?\d+( n\.s\.)? +128 )")))
      << mixed.output;
  EXPECT_TRUE(std::regex_search(mixed.output, std::regex(R"(\nMeta-Llama-3-8B +4134 +> 9293 +0 +> 9293 +- )")))
      << mixed.output;
  EXPECT_EQ(mixed.output.find("note:"), std::string::npos) << mixed.output;  // a current file agrees with itself
  EXPECT_NE(read_text(dir_->path() / "mixed" / "compare.svg").find(">Meta-Llama-3-8B copy<"), std::string::npos);

  write_text(dir_->path() / "bad.json", R"({"schema": "something/else", "points": []})");
  auto bad = lrahost("forget --compare " + (dir_->path() / "bad.json").string() + " --out " +
                     (dir_->path() / "cmp2").string());
  EXPECT_EQ(bad.code, 5) << bad.output;
  EXPECT_NE(bad.output.find("bad.json"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("schema"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(dir_->path() / "cmp2" / "compare.svg"));
}

TEST_F(ForgetSmoke, RefusesToOverwriteAnEarlierCurve) {
  ASSERT_EQ(outcome_->code, 0) << outcome_->output;
  auto o = lrahost("forget --plugin transformer --preset smoke --corpus " + (dir_->path() / "corpus.txt").string() +
                   " --out " + (dir_->path() / "run").string());
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("already holds a forgetting.json"), std::string::npos) << o.output;
}

TEST(ForgetCli, LinearTransformerTrainsInTheSameLm) {
  TempDir d;
  write_text(d.path() / "corpus.txt", fixture_text(120000));
  auto o = lrahost("forget --plugin linear_transformer --preset smoke --set train.decay_steps=20 --set train.warmup=5 "
                   "--set train.steps=60 --corpus " + (d.path() / "corpus.txt").string() + " --out " +
                   (d.path() / "run").string());
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = read_json(d.path() / "run" / "forgetting.json");
  EXPECT_EQ(j["label"], "linear_transformer");
  EXPECT_EQ(j["model"]["overrides"].size(), 3u);
}

// A causal mixer without LRA_CAP_ROTARY (forgetting-v1.2): the manifest's
// model.positions_without_rotary decides the LM's positions, recorded in forgetting.json.
TEST(ForgetCli, CausalMixerWithoutRotaryTrainsWithTheManifestsPositions) {
  TempDir d;
  write_text(d.path() / "corpus.txt", fixture_text(120000));
  const std::string base = "forget --plugin performer --preset smoke --set train.decay_steps=20 --set train.warmup=5 "
                           "--set train.steps=40 --corpus " + (d.path() / "corpus.txt").string();
  auto o = lrahost(base + " --out " + (d.path() / "none").string());
  ASSERT_EQ(o.code, 0) << o.output;
  json j = read_json(d.path() / "none" / "forgetting.json");
  EXPECT_EQ(j["model"]["positions"], "none");
  EXPECT_EQ(j["model"]["config"]["model"]["positions_without_rotary"], "none");
  EXPECT_NE(o.output.find("conformance checks passed"), std::string::npos) << o.output;

  auto s = lrahost(base + " --set model.positions_without_rotary=sinusoidal --out " + (d.path() / "sin").string());
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_EQ(read_json(d.path() / "sin" / "forgetting.json")["model"]["positions"], "sinusoidal");

  // A rotary mixer keeps rotary whatever the key says.
  auto r = lrahost("forget --plugin transformer --preset smoke --set train.decay_steps=20 --set train.warmup=5 "
                   "--set train.steps=30 --corpus " + (d.path() / "corpus.txt").string() + " --out " +
                   (d.path() / "rot").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_json(d.path() / "rot" / "forgetting.json")["model"]["positions"], "rotary");
}

TEST(ForgetCli, BadInvocationsFailCleanlyWithTheirExitCodes) {
  TempDir d;
  const std::string out = " --out " + (d.path() / "out").string();
  write_text(d.path() / "corpus.txt", fixture_text(120000));
  write_text(d.path() / "tiny.txt", fixture_text(300));
  struct Case {
    std::string args;
    int code;
    std::string needle;
  } cases[] = {
      {"forget" + out, 2, "exactly one of --plugin"},
      {"forget --plugin transformer --torchscript x.pt" + out, 2, "exactly one of"},
      {"forget --plugin no_such_mixer --preset smoke" + out, 3, "no_such_mixer"},  // as `run`: a plugin error
      // performer is causal but does not apply rotary positions: releases before forgetting-v1.2 refuse it.
      {"forget --plugin performer --manifest " LRA_SOURCE_DIR "/manifests/released/forgetting-v1.1/forgetting.toml "
       "--corpus " + (d.path() / "corpus.txt").string() + out, 3, "model.positions_without_rotary"},
      // linformer has no causal mode at all.
      {"forget --plugin linformer --preset smoke --corpus " + (d.path() / "corpus.txt").string() + out, 3,
       "LRA_CAP_CAUSAL"},
      {"forget --plugin transformer --preset smoke --corpus " + (d.path() / "tiny.txt").string() + out, 5, "tiny.txt"},
      {"forget --plugin transformer --preset smoke --corpus " + (d.path() / "missing.txt").string() + out, 5,
       "missing.txt"},
      {"forget --plugin transformer --preset smoke --max-len 4 --corpus " + (d.path() / "corpus.txt").string() + out, 2,
       "--max-len 4"},
      {"forget --plugin transformer --preset smoke --set model.pooling=cls --corpus " +
           (d.path() / "corpus.txt").string() + out,
       4, "model.pooling"},
      {"forget --torchscript " + (d.path() / "none.pt").string() + " --bos 1 --eos 2 --corpus " +
           (d.path() / "corpus.txt").string() + out,
       2, "none.pt"},
      {"forget --torchscript " + (d.path() / "corpus.txt").string() + " --corpus " + (d.path() / "corpus.txt").string() +
           out,
       2, "--bos"},
      {"forget --torchscript " + (d.path() / "corpus.txt").string() + " --bos 1 --eos 2 --max-len 64 --corpus " +
           (d.path() / "corpus.txt").string() + out,
       3, "not a loadable TorchScript model"},
  };
  for (const auto& c : cases) {
    auto o = lrahost(c.args);
    EXPECT_EQ(o.code, c.code) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find(c.needle), std::string::npos) << c.args << "\n" << o.output;
    EXPECT_FALSE(fs::exists(d.path() / "out" / "forgetting.json")) << c.args;
  }
}

// The reference tool's own published result file (tests/fixtures/forgetting/README.md):
// Table 3's rule gives the paper's "4k" and "> 9k"; the prefix rule gives fine 0.
TEST(ForgetCompare, ReadsThePublishedReferenceCurve) {
  TempDir d;
  auto o = lrahost("forget --compare " + llama3().string() + " --out " + (d.path() / "cmp").string());
  ASSERT_EQ(o.code, 0) << o.output;
  //                                              fine  coarse   fine (prefix)  coarse (prefix)  train len
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\nMeta-Llama-3-8B +4134 +> 9293 +0 +> 9293 +- )"))) << o.output;
  EXPECT_NE(o.output.find("(reference tool)"), std::string::npos) << o.output;
  const std::string svg = read_text(d.path() / "cmp" / "compare.svg");
  EXPECT_NE(svg.find("fine 4134, coarse &gt; 9293"), std::string::npos);
}

// docs/measured holds curves written before the Table 3 rule: their lengths are
// recomputed from the points, and the stored (prefix-rule) values are pointed out.
TEST(ForgetCompare, RecomputesTheMeasuredCurvesAndNotesTheirStoredValues) {
  TempDir d;
  const fs::path measured = fs::path(LRA_SOURCE_DIR) / "docs/measured";
  auto o = lrahost("forget --compare " + (measured / "forgetting-transformer-h100.json").string() + " " +
                   (measured / "forgetting-linear_transformer-h100.json").string() + " --out " +
                   (d.path() / "cmp").string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\ntransformer +0 +1982 n\.s\. +0 +139 n\.s\. +1024 )"))) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\nlinear_transformer +0 +797 +0 +0 +1024 )"))) << o.output;
  EXPECT_NE(o.output.find("forgetting-transformer-h100.json: the stored memory lengths differ from those its points "
                          "give: coarse_length 139, recomputed 1982"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("the stored values are the prefix rule's"), std::string::npos) << o.output;
}

// docs/measured/cpu: the state-space mixers' curves beside transformer and
// linear_transformer under the CPU-sized manifest (docs/forgetting.md): the
// lengths documented there are what the stored points give.
TEST(ForgetCompare, RecomputesTheCpuSizedStateSpaceCurves) {
  TempDir d;
  const fs::path cpu = fs::path(LRA_SOURCE_DIR) / "docs/measured/cpu";
  std::string files;
  for (const char* p : {"transformer", "linear_transformer", "s4d", "mamba2"})
    files += " " + (cpu / (std::string("forgetting-") + p + "-cpu-small.json")).string();
  auto o = lrahost("forget --compare" + files + " --out " + (d.path() / "cmp").string());
  ASSERT_EQ(o.code, 0) << o.output;
  //                                              fine  coarse   fine (prefix)  coarse (prefix)  train len
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\ntransformer +0 +411 +0 +0 +256 )"))) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\nlinear_transformer +0 +478 n\.s\. +0 +0 +256 )"))) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\ns4d +0 +209 n\.s\. +0 +0 +256 )"))) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(\nmamba2 +0 +8 n\.s\. +0 +8 n\.s\. +256 )"))) << o.output;
  EXPECT_EQ(o.output.find("stored memory lengths differ"), std::string::npos) << o.output;
}

TEST(ForgetCompare, BadReferenceFilesExitWithCode5NamingFileElementAndField) {
  TempDir d;
  const std::string good = read_text(llama3());
  const json list = json::parse(good);
  auto edited = [&](auto edit) {
    json doc = list;
    edit(doc);
    return doc.dump(1);
  };
  struct Case {
    std::string name, text, needle;
  } cases[] = {
      {"not_json", "[{\"length\": 8,", "not valid JSON"},
      {"scalar", "\"a curve\"", "expected a JSON list or object"},
      {"empty", "[]", "the list is empty"},
      {"missing_copy_mean", edited([](json& j) { j[3].erase("copy_mean"); }), "[3].copy_mean: missing"},
      {"missing_length", edited([](json& j) { j[0].erase("length"); }), "[0].length: missing"},
      {"string_length", edited([](json& j) { j[2]["length"] = "1039"; }), "[2].length: expected an integer"},
      {"string_lm_mean", edited([](json& j) { j[4]["lm_mean"] = "0.5"; }), "[4].lm_mean: expected a number"},
      {"descending", edited([](json& j) { j[6]["length"] = 100; }), "[6].length: 100 does not exceed"},
      {"negative_acc", edited([](json& j) { j[1]["lm_accs"][2] = -0.5; }), "[1].lm_accs[2]: -0.5 is not in [0, 1]"},
      {"acc_above_one", edited([](json& j) { j[1]["copy_mean"] = 1.5; }), "[1].copy_mean: 1.5 is not in [0, 1]"},
      {"short_accs", edited([](json& j) { j[5]["lm_accs"].erase(1); }), "[5].lm_accs: 9 values"},
      {"one_list", edited([](json& j) { j[5].erase("copy_accs"); }), "[5].copy_accs: missing, though lm_accs"},
      {"element_not_object", edited([](json& j) { j[7] = json::array(); }), "[7]: expected an object"},
      // Python's json.dump writes NaN: the file is then not JSON, but the field is named.
      {"nan", std::regex_replace(good, std::regex("0\\.9923664331436157"), "NaN"),
       "[1].copy_accs[7]: expected a number, got NaN"},
  };
  for (const auto& c : cases) {
    const fs::path file = d.path() / (c.name + ".json");
    write_text(file, c.text);
    const fs::path out = d.path() / ("out_" + c.name);
    // A good file first: nothing may be written when any file fails.
    auto o = lrahost("forget --compare " + llama3().string() + " " + file.string() + " --out " + out.string());
    EXPECT_EQ(o.code, 5) << c.name << "\n" << o.output;
    EXPECT_NE(o.output.find(file.string() + ": "), std::string::npos) << c.name << "\n" << o.output;
    EXPECT_NE(o.output.find(c.needle), std::string::npos) << c.name << "\n" << o.output;
    EXPECT_NE(o.output.find("fix the file"), std::string::npos) << c.name << "\n" << o.output;
    EXPECT_FALSE(fs::exists(out)) << c.name;
  }
}

}  // namespace
}  // namespace lra::test
