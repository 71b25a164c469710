// `lrahost data generate|check` and bad data (exit 5, file and line named).
#include <gtest/gtest.h>

#include "cli_harness.h"
#include "tiny_run.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using lra::test::write_text;

namespace {

std::string fingerprint_of(const std::string& output) {
  auto pos = output.find("fingerprint");
  return pos == std::string::npos ? "" : output.substr(pos, output.find('\n', pos) - pos);
}

const char* kGoodRows =
    "Source\tTarget\n"
    "( ( ( [MAX 2 ) 9 ) ] )\t9\n"
    "( ( ( [MIN 4 ) 1 ) ] )\t1\n"
    "( ( ( ( [SM 5 ) 6 ) 3 ) ] )\t4\n";

}  // namespace

TEST(DataCli, GenerateIsDeterministicAndCheckable) {
  TempDir dir;
  auto a = lrahost("data generate listops --n 200 --seed 7 --threads 2 --out " + dir.str() + "/a");
  ASSERT_EQ(a.code, 0) << a.output;
  auto b = lrahost("data generate listops --n 200 --seed 7 --threads 1 --out " + dir.str() + "/b");
  ASSERT_EQ(b.code, 0) << b.output;
  for (const char* f : {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"})
    EXPECT_EQ(read_text(dir.path() / "a" / f), read_text(dir.path() / "b" / f)) << f;

  auto ca = lrahost("data check --task listops --data-dir " + dir.str() + "/a");
  ASSERT_EQ(ca.code, 0) << ca.output;
  EXPECT_NE(ca.output.find("192 examples"), std::string::npos) << ca.output;  // 96% of 200
  EXPECT_NE(ca.output.find("4 examples"), std::string::npos) << ca.output;    // 2% of 200
  auto cb = lrahost("data check --task listops --data-dir " + dir.str() + "/b");
  EXPECT_EQ(fingerprint_of(ca.output), fingerprint_of(cb.output));
  EXPECT_NE(fingerprint_of(ca.output), "");
}

// `data generate --set` takes the task's [data] keys (another ListOps depth:
// other data), and refuses what the task does not take, writing nothing.
TEST(DataCli, GenerateTakesTheTasksDataKeysAndRefusesOthers) {
  TempDir dir;
  auto deep = lrahost("data generate listops --n 200 --seed 7 --set max_depth=12 --out " + dir.str() + "/deep");
  ASSERT_EQ(deep.code, 0) << deep.output;
  auto plain = lrahost("data generate listops --n 200 --seed 7 --out " + dir.str() + "/plain");
  ASSERT_EQ(plain.code, 0) << plain.output;
  EXPECT_NE(read_text(dir.path() / "deep" / "basic_train.tsv"), read_text(dir.path() / "plain" / "basic_train.tsv"));
  const struct {
    const char* set;
    int code;
    const char* says;
  } bad[] = {{"nope=1", 4, "unknown key 'data.nope' for task 'listops' (valid: "},
             {"max_depth=abc", 2, "'abc' is not a valid value for data.max_depth"},
             {"max_depth=12x", 2, "'12x' is not a valid value for data.max_depth"},
             {"max_depth", 2, "expected KEY=VALUE"}};
  for (const auto& b : bad) {
    const std::string out = dir.str() + "/bad-" + std::to_string(&b - bad);
    auto o = lrahost("data generate listops --n 200 --set " + std::string(b.set) + " --out " + out);
    EXPECT_EQ(o.code, b.code) << b.set << ": " << o.output;
    EXPECT_NE(o.output.find(b.says), std::string::npos) << o.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << b.set;
  }
}

TEST(DataCli, MissingDataSaysWhatIsExpected) {
  TempDir dir;
  auto o = lrahost("data check --task listops --data-dir " + dir.str() + "/nothing");
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("basic_train.tsv"), std::string::npos) << o.output;
}

TEST(DataCli, CorruptTsvExits5NamingFileAndLine) {
  TempDir dir;
  const auto d = dir.path() / "listops-1000";
  write_text(d / "basic_train.tsv", kGoodRows);
  write_text(d / "basic_val.tsv", kGoodRows);
  write_text(d / "basic_test.tsv", std::string(kGoodRows) + "( ( ( [MAX 2 ) 9 )");  // truncated last line
  auto o = lrahost("data check --task listops --data-dir " + dir.str());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("basic_test.tsv:5:"), std::string::npos) << o.output;  // file and line

  // Under `run` too: release files of other sizes would load (an open run,
  // test_closed_trust_cli.cpp), but a cut line is refused: exit 5, no run directory.
  auto r = lrahost("run --plugin transformer --task listops --data-dir " + dir.str() + " --out " + dir.str() + "/run");
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("basic_test.tsv:5:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run"));

  write_text(d / "basic_test.tsv", "Source\tTarget\n( ( [MAX 2 ) 9\t9\n");  // unbalanced
  auto u = lrahost("data check --task listops --data-dir " + dir.str());
  EXPECT_EQ(u.code, 5) << u.output;
  EXPECT_NE(u.output.find("basic_test.tsv:2:"), std::string::npos) << u.output;
}
