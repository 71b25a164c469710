// Retrieval (AAN pairs, byte level): TSV parsing, paired ids, lookup folders,
// subsets, and errors that name FILE:LINE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "aan_reader.h"
#include "data_fixtures.h"
#include "lra/task.h"
#include "task_util.h"

namespace fs = std::filesystem;
using namespace lra::retrieval;
using lra::tasks::choose_subset;
using lra::test::write_file;

extern "C" const lra_plugin_api* lra_plugin_entry(void);  // retrieval_task.cpp, compiled into this test

namespace {

const lra::TaskPlugin& plugin() { return *static_cast<const lra::TaskPlugin*>(lra_plugin_entry()->interface); }

std::vector<int32_t> ids(const std::string& s) {
  std::vector<int32_t> v;
  for (unsigned char c : s) v.push_back(c + 1);
  return v;
}

std::vector<int32_t> first(const lra::Split& s, size_t i) {
  return {s.tokens.begin() + s.offsets[i], s.tokens.begin() + s.offsets[i + 1]};
}
std::vector<int32_t> second(const lra::Split& s, size_t i) {
  return {s.tokens2.begin() + s.offsets2[i], s.tokens2.begin() + s.offsets2[i + 1]};
}

class RetrievalTask : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("lra_retrieval_task_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string error_for(const std::string& text, int64_t cap = 0) {
    const fs::path p = dir_ / "bad.tsv";
    write_file(p, text);
    try {
      read_aan_tsv(p.string(), 4000, cap, 0);
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::data);
      return e.what();
    }
    ADD_FAILURE() << "no error for " << text;
    return "";
  }

  void write_split_files(const fs::path& dir, const std::string& train, const std::string& eval,
                         const std::string& test) {
    write_file(dir / "new_aan_pairs.train.tsv", train);
    write_file(dir / "new_aan_pairs.eval.tsv", eval);
    write_file(dir / "new_aan_pairs.test.tsv", test);
  }

  lra::Status load(const lra::Params& params, lra::Dataset* ds) {
    lra::DataRequest req;
    req.data_root = (dir_ / "root").string();
    req.params = params;
    req.allow_generate = false;
    return plugin().load(req, ds);
  }

  fs::path dir_;
};

}  // namespace

TEST_F(RetrievalTask, ParsesPairsLabelsAndCrlf) {
  const fs::path p = dir_ / "pairs.tsv";
  write_file(p,
             "1\tP01-1001\tP02-2002\tAbc\tXy z\n"
             "0.0\tA\tB\tcaf\xC3\xA9\t\r\n"
             "\n"  // blank lines are skipped
             "1.0\tC\tD\t\"quoted\" text\tq\r\n"
             "0\tE\tF\tlast\twith newline\n");
  ReadReport rep;
  const lra::Split s = read_aan_tsv(p.string(), 4000, 0, 0, &rep);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{1, 0, 1, 0}));
  EXPECT_EQ(first(s, 0), ids("Abc"));
  EXPECT_EQ(second(s, 0), ids("Xy z"));
  EXPECT_EQ(first(s, 1), ids("caf\xC3\xA9"));
  EXPECT_TRUE(second(s, 1).empty());  // an empty text is kept (and counted), "\r" is not part of it
  EXPECT_EQ(first(s, 2), ids("\"quoted\" text"));  // no quote handling
  EXPECT_EQ(second(s, 2), ids("q"));
  EXPECT_EQ(second(s, 3), ids("with newline"));
  EXPECT_EQ(s.offsets.size(), 5u);
  EXPECT_EQ(s.offsets2.size(), 5u);
  EXPECT_EQ(s.offsets.back(), static_cast<int64_t>(s.tokens.size()));
  EXPECT_EQ(s.offsets2.back(), static_cast<int64_t>(s.tokens2.size()));
  EXPECT_EQ(rep.rows, 4);
  EXPECT_EQ(rep.kept, 4);
  EXPECT_EQ(rep.positives, 2);
  EXPECT_EQ(rep.empty_docs, 1);

  // truncation: max_length, and LRA's 10,000-byte cut before it
  const std::string longdoc(12000, 'a');
  write_file(p, "1\ta\tb\t" + longdoc + "\tshort\n");
  lra::Split t = read_aan_tsv(p.string(), 7, 0, 0, &rep);
  EXPECT_EQ(first(t, 0), ids("aaaaaaa"));
  EXPECT_EQ(second(t, 0), ids("short"));
  EXPECT_EQ(rep.cut_docs, 1);
  t = read_aan_tsv(p.string(), 20000, 0, 0);
  EXPECT_EQ(t.offsets[1], kDocBytes);
}

TEST_F(RetrievalTask, BadLinesNameFileAndLine) {
  const std::string path = (dir_ / "bad.tsv").string();
  std::string msg = error_for("1\ta\tb\tx\ty\n0\ta\tb\tonly four\n");
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 4"), std::string::npos) << msg;
  msg = error_for("1\ta\tb\tx\ty\n1\ta\tb\tx\ty\n0\ta\tb\ttab\tinside\ttext\n");
  EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 6"), std::string::npos) << msg;
  msg = error_for("yes\ta\tb\tx\ty\n");
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 'yes'"), std::string::npos) << msg;
  msg = error_for("1\ta\tb\tx\ty\n\n2\ta\tb\tx\ty\n");  // the blank line still counts
  EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("label '2'"), std::string::npos) << msg;
  msg = error_for("0.5\ta\tb\tx\ty\n");
  EXPECT_NE(msg.find("is not 0 or 1"), std::string::npos) << msg;
  msg = error_for("1\ta\tb\tx");  // a truncated last line
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the file ends inside this line"), std::string::npos) << msg;
  // Issue 18: a last row cut inside its last column (5 columns, no line end) was read as a shorter text2.
  msg = error_for("1\ta\tb\tx\ty\n0\ta\tb\tfull text\tcut in the midd");
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the last row has no line end"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the file ends inside this line"), std::string::npos) << msg;
  msg = error_for("1\ta\tb\tx\ty\r");  // a CRLF file cut between the two
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no line end"), std::string::npos) << msg;
  msg = error_for("1\ta\tb\tx\ty\n0\ta\tb\tx\ty\n1\ta\tb\tx\tcut", 1);  // also when the row is not in the subset
  EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
  // a bad record outside a capped subset is still an error
  msg = error_for("1\ta\tb\tx\ty\n0\ta\tb\tx\ty\n1\ta\tb\tx\ty\nnan\ta\tb\tx\ty\n", 1);
  EXPECT_NE(msg.find(path + ":4:"), std::string::npos) << msg;
  msg = error_for("");
  EXPECT_NE(msg.find("holds no records"), std::string::npos) << msg;
  try {
    read_aan_tsv((dir_ / "absent.tsv").string(), 10, 0, 0);
    ADD_FAILURE();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("absent.tsv"), std::string::npos);
  }
}

TEST_F(RetrievalTask, FindsTheReleaseLayoutsAndListsThemWhenMissing) {
  lra::Dataset ds;
  lra::Status st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  const fs::path root = dir_ / "root";
  for (const fs::path& d : {root, root / "tsv_data", root / "lra_release" / "tsv_data",
                            root / "lra_release" / "lra_release" / "tsv_data"})
    EXPECT_NE(st.message.find(d.string()), std::string::npos) << d << "\n" << st.message;
  EXPECT_NE(st.message.find("lra_release.gz"), std::string::npos) << st.message;

  const fs::path rel = root / "lra_release" / "lra_release" / "tsv_data";
  write_file(rel / "new_aan_pairs.train.tsv", "1\ta\tb\tx\ty\n");
  st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find("missing " + (rel / "new_aan_pairs.eval.tsv").string()), std::string::npos)
      << st.message;

  write_split_files(rel, "1\ta\tb\tx\ty\n0\tc\td\tuu\tv\n", "1\ta\tb\tev\tw\n", "0\ta\tb\tte\tst\n");
  st = load({}, &ds);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_TRUE(ds.info.paired);
  EXPECT_EQ(ds.info.vocab_size, 257);
  EXPECT_EQ(ds.info.num_classes, 2);
  EXPECT_EQ(ds.info.natural_len, 4000);
  EXPECT_EQ(ds.info.vocabulary.size(), 257u);
  ASSERT_EQ(ds.train.size(), 2u);
  EXPECT_EQ(second(ds.train, 1), ids("v"));
  ASSERT_EQ(ds.val.size(), 1u);  // validation = the eval file
  EXPECT_EQ(first(ds.val, 0), ids("ev"));
  ASSERT_EQ(ds.test.size(), 1u);
  EXPECT_EQ(first(ds.test, 0), ids("te"));
  EXPECT_NE(ds.source.find(rel.string()), std::string::npos) << ds.source;
  EXPECT_NE(ds.source.find("train 2 pairs (50.0% linked)"), std::string::npos) << ds.source;

  // a folder nearer the root wins
  write_split_files(root / "tsv_data", "0\ta\tb\tnear\ty\n", "1\ta\tb\tx\ty\n", "1\ta\tb\tx\ty\n");
  ASSERT_TRUE(load({}, &ds).ok());
  EXPECT_EQ(first(ds.train, 0), ids("near"));
  EXPECT_EQ(find_aan_dir(root), root / "tsv_data");
}

TEST_F(RetrievalTask, FixtureAndSubsets) {
  lra::test::write_aan_fixture(dir_ / "root", 60, 20, 30, 11);
  lra::Dataset full;
  lra::Status st = load({}, &full);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_EQ(full.train.size(), 60u);
  ASSERT_EQ(full.val.size(), 20u);
  ASSERT_EQ(full.test.size(), 30u);
  int64_t positives = 0;
  for (int32_t l : full.train.labels) positives += l;
  EXPECT_GT(positives, 15);
  EXPECT_LT(positives, 45);
  for (size_t i = 0; i < full.train.size(); ++i) {
    EXPECT_GE(full.train.offsets[i + 1] - full.train.offsets[i], 300);
    EXPECT_LE(full.train.offsets2[i + 1] - full.train.offsets2[i], 1600);
  }

  lra::Dataset sub;
  st = load({{"train_examples", int64_t{25}}, {"eval_examples", int64_t{7}}, {"seed", int64_t{2}},
             {"max_length", int64_t{50}}},
            &sub);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_EQ(sub.train.size(), 25u);
  EXPECT_EQ(sub.val.size(), 7u);
  EXPECT_EQ(sub.test.size(), 7u);
  EXPECT_EQ(sub.info.natural_len, 50);
  const auto pick = choose_subset(60, 25, 2);
  for (size_t k = 0; k < pick.size(); ++k) {
    auto a = first(full.train, pick[k]);
    a.resize(50);
    EXPECT_EQ(first(sub.train, k), a) << k;
    EXPECT_EQ(sub.train.labels[k], full.train.labels[pick[k]]);
  }
  EXPECT_NE(sub.source.find("subset (seed 2): 25 of 60 train pairs, 7 of 20 validation pairs, 7 of 30 test pairs"),
            std::string::npos)
      << sub.source;
  EXPECT_NE(sub.source.find("documents truncated"), std::string::npos) << sub.source;
}

TEST_F(RetrievalTask, OptionsRulesAndNoGenerator) {
  std::vector<lra::OptionSpec> specs;
  ASSERT_TRUE(plugin().data_options(&specs).ok());
  lra::Params params;
  for (const auto& s : specs) params[s.name] = s.default_value;
  EXPECT_EQ(params.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(params.at("max_length")), 4000);
  EXPECT_EQ(std::get<int64_t>(params.at("train_examples")), 0);
  lra::Dataset ds;
  EXPECT_EQ(load({{"max_length", int64_t{0}}}, &ds).kind, lra::ErrorKind::rules);
  EXPECT_EQ(load({{"eval_examples", int64_t{-3}}}, &ds).kind, lra::ErrorKind::rules);
  lra::Status st = plugin().generate((dir_ / "out").string(), {}, 100, 0, 1);
  EXPECT_EQ(st.kind, lra::ErrorKind::usage);
  EXPECT_NE(st.message.find("no generator"), std::string::npos) << st.message;
}
