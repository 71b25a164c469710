// `lrahost forget` end to end: a real small LM trained on CPU produces a
// valid curve; TorchScript models; --compare; every bad input has its exit
// code, a message naming the problem, and no partial output.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
  // A model that trained learned something: its LM accuracy beats chance (1/258) clearly.
  EXPECT_GT(j["points"].back()["lm_mean"].get<double>(), 0.1);
  const auto max_len = j["configuration"]["max_length"].get<int64_t>();
  EXPECT_LE(j["fine_length"].get<int64_t>(), max_len);
  EXPECT_LE(j["coarse_length"].get<int64_t>(), max_len);
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

  write_text(dir_->path() / "bad.json", R"({"schema": "something/else", "points": []})");
  auto bad = lrahost("forget --compare " + (dir_->path() / "bad.json").string() + " --out " +
                     (dir_->path() / "cmp2").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
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
      // performer is causal but does not apply rotary positions.
      {"forget --plugin performer --preset smoke --corpus " + (d.path() / "corpus.txt").string() + out, 3,
       "LRA_CAP_ROTARY"},
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

}  // namespace
}  // namespace lra::test
