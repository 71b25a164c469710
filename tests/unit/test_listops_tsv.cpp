// ListOps TSV tokenisation, validation and the task plugin's folder logic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "lra/task.h"
#include "tsv_reader.h"

namespace fs = std::filesystem;
using namespace lra::listops;

extern "C" const lra_plugin_api* lra_plugin_entry(void);  // listops_task.cpp, compiled into this test

namespace {

class ListOpsTsv : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("lra_listops_tsv_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The message of the data error read_tsv throws for `text`.
  std::string error_for(const std::string& name, const std::string& text) {
    const std::string path = write(name, text);
    try {
      read_tsv(path);
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::data);
      return e.what();
    }
    ADD_FAILURE() << "no error for " << name;
    return "";
  }
  fs::path dir_;
};

const std::string kMaxLine = "( ( ( [MAX 2 ) 9 ) ] )\t9\n";
const std::string kNested = "( ( ( [MIN ( ( ( [MAX 2 ) 9 ) ] ) ) 3 ) ] )\t3\n";

const lra::TaskPlugin& plugin() {
  return *static_cast<const lra::TaskPlugin*>(lra_plugin_entry()->interface);
}

}  // namespace

TEST(ListOpsTokenize, ReferencePreprocessing) {
  EXPECT_EQ(tokenize("( ( ( [MAX 2 ) 9 ) ] )"), (std::vector<int32_t>{kMax, kDigit0 + 2, kDigit0 + 9, kClose}));
  EXPECT_EQ(tokenize("[MIN [MED [SM 0 X ] 5 ]"),
            (std::vector<int32_t>{kMin, kMed, kSm, kDigit0, kClose, kClose, kDigit0 + 5, kClose}));
  // parentheses are deleted before splitting, so they do not separate tokens
  EXPECT_EQ(tokenize("(9) (1)(2) [MAX)"), (std::vector<int32_t>{kDigit0 + 9, kOov, kMax}));
  EXPECT_EQ(tokenize("[FIRST 10 ]]"), (std::vector<int32_t>{kOov, kOov, kOov}));
  const auto& v = vocabulary();
  ASSERT_EQ(static_cast<int32_t>(v.size()), kVocabSize);
  EXPECT_EQ(v[0], "<pad>");
  EXPECT_EQ(v[1], "[MIN");
  EXPECT_EQ(v[4], "[SM");
  EXPECT_EQ(v[5], "0");
  EXPECT_EQ(v[14], "9");
  EXPECT_EQ(v[15], "X");
  EXPECT_EQ(v[16], "<oov>");
}

TEST_F(ListOpsTsv, ReadsReleaseFormatWithCrlf) {
  const std::string path = std::string(LRA_SOURCE_DIR) + "/tests/fixtures/listops/release_sample.tsv";
  ReadReport rep;
  const lra::Split s = read_tsv(path, &rep);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{9, 3, 2}));
  EXPECT_EQ(s.offsets, (std::vector<int64_t>{0, 4, 11, 17}));
  EXPECT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + 4),
            (std::vector<int32_t>{kMax, kDigit0 + 2, kDigit0 + 9, kClose}));
  EXPECT_EQ(rep.label_mismatches, 0);
  EXPECT_EQ(rep.oov_tokens, 0);
  EXPECT_EQ(rep.max_tokens, 7);
}

TEST_F(ListOpsTsv, CountsOovAndLabelMismatchesWithoutFailing) {
  const std::string path =
      write("soft.tsv", "Source\tTarget\n" + kMaxLine + "( ( ( [MAX 2 ) foo ) ] )\t2\n( ( ( [MAX 2 ) 9 ) ] )\t5\n");
  ReadReport rep;
  const lra::Split s = read_tsv(path, &rep);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.tokens[s.offsets[1] + 2], kOov);
  EXPECT_EQ(rep.oov_tokens, 1);
  EXPECT_EQ(rep.oov_examples, 1);
  EXPECT_NE(rep.first_oov.find("soft.tsv:3"), std::string::npos) << rep.first_oov;
  EXPECT_NE(rep.first_oov.find("foo"), std::string::npos);
  EXPECT_EQ(rep.label_mismatches, 1);  // the OOV line is undecidable, not a mismatch
  EXPECT_NE(rep.first_mismatch.find("soft.tsv:4"), std::string::npos) << rep.first_mismatch;
}

TEST_F(ListOpsTsv, BadInputsNameFileAndLine) {
  struct Case {
    const char* name;
    std::string text;
    const char* where;  // "file:line"
    const char* what;
  };
  const Case cases[] = {
      {"noheader.tsv", kMaxLine + kNested, "noheader.tsv:1:", "header"},
      {"empty.tsv", "", "empty.tsv:1:", "header"},
      {"threecols.tsv", "Source\tTarget\n" + kMaxLine + "( ( ( [MAX 2 ) 9 ) ] )\t9\t1\n", "threecols.tsv:3:",
       "found 3"},
      {"onecol.tsv", "Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\n", "onecol.tsv:2:", "found 1"},
      {"target12.tsv", "Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\t12\n", "target12.tsv:2:", "'12' is not an integer 0-9"},
      {"targetx.tsv", "Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\tx\n", "targetx.tsv:2:", "not an integer"},
      {"truncated.tsv", "Source\tTarget\n" + kMaxLine + kNested + "( ( ( [MIN ( ( ( [MAX 2 ) 9", "truncated.tsv:4:",
       "truncated"},
      {"truncated2.tsv", "Source\tTarget\n" + kMaxLine + "( ( ( [MIN ( ( ( [MAX 2 ) 9\t3\n", "truncated2.tsv:3:",
       "unbalanced"},
      {"unclosed.tsv", "Source\tTarget\n" + kMaxLine + kMaxLine + "[MAX 2 9\t9\n", "unclosed.tsv:4:", "not closed by X"},
      {"stray.tsv", "Source\tTarget\n2 ]\t2\n", "stray.tsv:2:", "without an open operator"},
      {"noargs.tsv", "Source\tTarget\n[SM ]\t0\n", "noargs.tsv:2:", "without operands"},
      {"two.tsv", "Source\tTarget\n" + kMaxLine + "3 4\t3\n", "two.tsv:3:", "more than one expression"},
      {"parens.tsv", "Source\tTarget\n( ( [MAX 2 ) 9 ) ] )\t9\n", "parens.tsv:2:", "unbalanced parentheses"},
      {"emptysrc.tsv", "Source\tTarget\n( )\t3\n", "emptysrc.tsv:2:", "empty Source"},
      {"blank.tsv", "Source\tTarget\n" + kMaxLine + "\n" + kMaxLine, "blank.tsv:3:", "empty line"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_for(c.name, c.text);
    EXPECT_NE(msg.find(c.where), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find("regenerate"), std::string::npos) << c.name << ": " << msg;
  }
  try {
    read_tsv((dir_ / "absent.tsv").string());
    ADD_FAILURE();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("absent.tsv"), std::string::npos);
  }
}

TEST_F(ListOpsTsv, PluginInfoOptionsAndGenerate) {
  std::vector<lra::OptionSpec> specs;
  ASSERT_TRUE(plugin().data_options(&specs).ok());
  lra::Params params;
  for (const auto& s : specs) params[s.name] = s.default_value;
  EXPECT_EQ(std::get<int64_t>(params.at("train_size")), 96000);
  EXPECT_EQ(std::get<int64_t>(params.at("max_length")), 2000);
  EXPECT_EQ(params.size(), 8u);

  // `lrahost data generate`: 96/2/2 of the total, straight into the folder
  lra::Params small = {{"min_length", int64_t{20}}, {"max_length", int64_t{100}}, {"max_depth", int64_t{6}},
                       {"max_args", int64_t{5}}};
  ASSERT_TRUE(plugin().generate((dir_ / "out").string(), small, 100, 3, 2).ok());
  EXPECT_EQ(read_tsv((dir_ / "out" / "basic_train.tsv").string()).size(), 96u);
  EXPECT_EQ(read_tsv((dir_ / "out" / "basic_test.tsv").string()).size(), 2u);

  lra::Params bad = small;
  bad["min_length"] = int64_t{100};
  EXPECT_EQ(plugin().generate((dir_ / "bad").string(), bad, 100, 3, 1).kind, lra::ErrorKind::rules);
  bad = small;
  bad["val_size"] = int64_t{-1};
  EXPECT_EQ(plugin().generate((dir_ / "bad").string(), bad, 100, 3, 1).kind, lra::ErrorKind::rules);
}

TEST_F(ListOpsTsv, PluginLoadGeneratesCachesAndExplainsMissingFiles) {
  lra::DataRequest req;
  req.data_root = (dir_ / "root").string();
  req.params = {{"train_size", int64_t{200}}, {"val_size", int64_t{20}}, {"test_size", int64_t{30}},
                {"min_length", int64_t{20}},  {"max_length", int64_t{100}}, {"max_depth", int64_t{6}},
                {"max_args", int64_t{5}},     {"seed", int64_t{9}}};
  req.threads = 2;
  req.allow_generate = false;
  lra::Dataset ds;
  lra::Status st = plugin().load(req, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find((dir_ / "root" / "listops" / "gen-").string()), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("basic_test.tsv"), std::string::npos) << st.message;

  req.allow_generate = true;
  st = plugin().load(req, &ds);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(ds.train.size(), 200u);
  EXPECT_EQ(ds.val.size(), 20u);
  EXPECT_EQ(ds.test.size(), 30u);
  EXPECT_EQ(ds.info.vocab_size, 17);
  EXPECT_EQ(ds.info.num_classes, 10);
  EXPECT_EQ(ds.info.natural_len, 100);
  EXPECT_FALSE(ds.info.paired);
  EXPECT_EQ(ds.info.vocabulary.size(), 17u);
  EXPECT_NE(ds.source.find("generated"), std::string::npos);
  int folders = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "root" / "listops")) {
    ++folders;
    EXPECT_EQ(e.path().filename().string().size(), 4u + 16u) << e.path();  // gen-<16 hex>
    EXPECT_TRUE(fs::exists(e.path() / "params.txt"));
  }
  EXPECT_EQ(folders, 1);

  // a second load reads the cache, even when generation is not allowed
  req.allow_generate = false;
  lra::Dataset again;
  ASSERT_TRUE(plugin().load(req, &again).ok());
  EXPECT_EQ(again.train.tokens, ds.train.tokens);
  EXPECT_EQ(again.test.labels, ds.test.labels);

  // another seed is another folder
  req.params["seed"] = int64_t{10};
  EXPECT_EQ(plugin().load(req, &again).kind, lra::ErrorKind::data);

  req.params["min_length"] = int64_t{99};
  EXPECT_EQ(plugin().load(req, &again).kind, lra::ErrorKind::rules);
}

TEST_F(ListOpsTsv, PluginPrefersReleaseLayoutForLraDefaults) {
  lra::DataRequest req;
  req.data_root = (dir_ / "root").string();
  req.allow_generate = false;  // defaults filled in by the plugin
  lra::Dataset ds;
  lra::Status st = plugin().load(req, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find("lra_release"), std::string::npos) << st.message;

  // a (tiny, hence wrongly sized) release folder is found and checked
  const std::string rel = "root/lra_release/listops-1000/";
  write(rel + "basic_train.tsv", "Source\tTarget\n" + kMaxLine);
  write(rel + "basic_val.tsv", "Source\tTarget\n" + kMaxLine);
  st = plugin().load(req, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find("missing"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("basic_test.tsv"), std::string::npos) << st.message;
  write(rel + "basic_test.tsv", "Source\tTarget\n" + kMaxLine);
  // Release files of other sizes load, and say so: an official run on them
  // is then open, naming the counts (the host's check, runs/official_registry.h).
  st = plugin().load(req, &ds);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(ds.train.size(), 1u);
  EXPECT_NE(ds.source.find("NOT the full dataset: basic_train.tsv holds 1 examples of 96000"), std::string::npos)
      << ds.source;
  // ... and these short examples are not LRA's release at all (issue 46): LRA's
  // generator keeps only trees of 500 < length < 2000 tokens.
  EXPECT_NE(ds.source.rfind(lra::kLraReleaseSource, 0), 0u) << ds.source;
  EXPECT_NE(ds.source.find("NOT LRA's release: 3 examples outside its generator's bounds"), std::string::npos)
      << ds.source;
  EXPECT_NE(ds.source.find("basic_train.tsv:2: length 4 tokens, outside (500, 2000)"), std::string::npos)
      << ds.source;
}

// The shape of every example against LRA's generator (lra_benchmarks/data/
// listops.py: 500 < length < 2000, depth <= 10, 2..10 operands): counted,
// the first one named with its reason.
TEST_F(ListOpsTsv, CountsExamplesOutsideTheBoundsOfLrasGenerator) {
  // Too many operands: [SM over 598 leaves, 600 tokens.
  std::string many = "[SM";
  for (int i = 0; i < 598; ++i) many += " 1";
  many += " ]";
  // Too deep: ten nested [MIN (the innermost one's [MAX leaves at depth 12), each holding one
  // leaf and five [MAX of nine leaves: 10 x (2 + 1 + 5 x 11) = 580 tokens.
  std::string deep;
  for (int level = 0; level < 10; ++level) {
    deep += "[MIN 1";
    for (int g = 0; g < 5; ++g) deep += " [MAX 1 1 1 1 1 1 1 1 1 ]";
    deep += " ";
  }
  for (int level = 0; level < 10; ++level) deep += "] ";
  // Within the bounds: [MIN over ten [MAX, each over nine [SM of four leaves: 562 tokens, depth 4.
  std::string fine = "[MIN";
  for (int i = 0; i < 10; ++i) {
    fine += " [MAX";
    for (int j = 0; j < 9; ++j) fine += " [SM 1 2 3 4 ]";
    fine += " ]";
  }
  fine += " ]";
  const std::string path =
      write("shapes.tsv", "Source\tTarget\n" + many + "\t0\n" + deep + "\t1\n" + fine + "\t0\n");
  ReadReport rep;
  const lra::Split split = read_tsv(path, &rep);
  ASSERT_EQ(split.size(), 3u);
  EXPECT_EQ(split.offsets[3] - split.offsets[2], 562);
  EXPECT_EQ(rep.outside_lra_bounds, 2);  // the third is within them
  EXPECT_NE(rep.first_outside_lra_bounds.find("shapes.tsv:2: an operator with 598 operands, outside 2..10"),
            std::string::npos)
      << rep.first_outside_lra_bounds;
  // The deep one alone, named by its depth.
  const std::string deep_only = write("deep.tsv", "Source\tTarget\n" + deep + "\t1\n");
  read_tsv(deep_only, &rep);
  EXPECT_EQ(rep.outside_lra_bounds, 1);
  EXPECT_NE(rep.first_outside_lra_bounds.find("deep.tsv:2: depth 12 > 10"), std::string::npos)
      << rep.first_outside_lra_bounds;
}
