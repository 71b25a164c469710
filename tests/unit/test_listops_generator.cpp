// ListOps evaluation, serialisation and the deterministic generator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "generator.h"
#include "lra/status.h"
#include "tsv_reader.h"

namespace fs = std::filesystem;
using namespace lra::listops;

namespace {

int32_t d(int v) { return kDigit0 + v; }

int eval(std::vector<int32_t> ids) { return evaluate(ids.data(), ids.size()); }

std::string codes(std::vector<int32_t> ids) { return std::string(ids.begin(), ids.end()); }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path temp_dir(const std::string& tag) {
  static int n = 0;
  auto p = fs::temp_directory_path() / ("lra_listops_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  fs::remove_all(p);
  return p;
}

// Depth and arities of a generated tree, checked against the parameters.
void check_shape(const std::string& c, const GeneratorParams& p) {
  std::vector<int64_t> arity;
  int64_t depth_max = 0;
  for (char ch : c) {
    const int id = static_cast<unsigned char>(ch);
    if (id != kClose && !arity.empty()) ++arity.back();
    if (id >= kMin && id <= kSm) arity.push_back(0);
    depth_max = std::max<int64_t>(depth_max, static_cast<int64_t>(arity.size()) + (id >= kDigit0 && id < kClose));
    if (id == kClose) {
      ASSERT_GE(arity.back(), 2);
      ASSERT_LE(arity.back(), p.max_args);
      arity.pop_back();
    }
  }
  ASSERT_LE(depth_max, p.max_depth);
}

const GeneratorParams kSmall{20, 100, 6, 5};

}  // namespace

TEST(ListOpsEval, Operators) {
  EXPECT_EQ(eval({kMin, d(3), d(1), d(4), kClose}), 1);
  EXPECT_EQ(eval({kMax, d(3), d(1), d(4), kClose}), 4);
  EXPECT_EQ(eval({kMed, d(3), d(1), d(4), kClose}), 3);
  EXPECT_EQ(eval({kSm, d(7), d(8), d(9), kClose}), 4);  // 24 mod 10
  EXPECT_EQ(eval({d(7)}), 7);
  // max(min(3,4), sm(9,9)=8, 2)
  EXPECT_EQ(eval({kMax, kMin, d(3), d(4), kClose, kSm, d(9), d(9), kClose, d(2), kClose}), 8);
}

TEST(ListOpsEval, EvenMedianIsTruncatedMean) {
  EXPECT_EQ(eval({kMed, d(3), d(4), kClose}), 3);              // 3.5 -> 3
  EXPECT_EQ(eval({kMed, d(9), d(1), d(3), d(2), kClose}), 2);  // sorted 1 2 3 9: 2.5 -> 2
  EXPECT_EQ(eval({kMed, d(9), d(8), kClose}), 8);              // 8.5 -> 8
  EXPECT_EQ(eval({kMed, d(2), d(6), kClose}), 4);
  EXPECT_EQ(eval({kMed, d(0), d(9), d(9), d(0), kClose}), 4);  // 4.5 -> 4
}

TEST(ListOpsEval, IllFormedIsRejected) {
  Evaluator e;
  int v;
  auto bad = [&](std::vector<int32_t> ids) {
    e.reset();
    bool ok = true;
    for (auto id : ids) ok = ok && e.push(id);
    return !(ok && e.finish(&v));
  };
  EXPECT_TRUE(bad({kClose}));
  EXPECT_TRUE(bad({kMax, d(2)}));
  EXPECT_TRUE(bad({kMax, kClose}));
  EXPECT_TRUE(bad({d(2), d(3)}));
  EXPECT_TRUE(bad({kMax, d(2), kClose, d(3)}));
  EXPECT_TRUE(bad({}));
  EXPECT_FALSE(bad({kMax, d(2), kClose}));
  // An unknown operand makes the value undecidable, not the structure wrong.
  e.reset();
  for (int32_t id : std::vector<int32_t>{kMax, d(2), kOov, kClose}) ASSERT_TRUE(e.push(id));
  ASSERT_TRUE(e.finish(&v));
  EXPECT_EQ(v, -1);
}

TEST(ListOpsSource, ReleaseParenthesisation) {
  EXPECT_EQ(to_source(codes({kMax, d(2), d(9), kClose})), "( ( ( [MAX 2 ) 9 ) ] )");
  EXPECT_EQ(to_source(codes({kMin, kMax, d(2), d(9), kClose, d(3), kClose})),
            "( ( ( [MIN ( ( ( [MAX 2 ) 9 ) ] ) ) 3 ) ] )");
  EXPECT_EQ(to_source(codes({kMed, d(1), d(2), d(3), d(9), kClose})), "( ( ( ( ( [MED 1 ) 2 ) 3 ) 9 ) ] )");
  EXPECT_EQ(to_source(codes({d(7)})), "7");
}

TEST(ListOpsGenerator, ValidatesParams) {
  auto kind = [](GeneratorParams p) {
    try {
      validate(p);
    } catch (const lra::Error& e) {
      return e.kind();
    }
    return lra::ErrorKind::none;
  };
  EXPECT_EQ(kind({}), lra::ErrorKind::none);
  EXPECT_EQ(kind({500, 500, 10, 10}), lra::ErrorKind::rules);
  EXPECT_EQ(kind({500, 501, 10, 10}), lra::ErrorKind::rules);  // nothing strictly between
  EXPECT_EQ(kind({600, 500, 10, 10}), lra::ErrorKind::rules);
  EXPECT_EQ(kind({5, 100, 1, 10}), lra::ErrorKind::rules);     // depth 1: single leaves only
  EXPECT_EQ(kind({500, 2000, 3, 3}), lra::ErrorKind::rules);   // longest tree is 2 + 3 * (2 + 3) = 17
  EXPECT_EQ(kind({10, 100, 5, 1}), lra::ErrorKind::rules);
  EXPECT_THROW(generate({}, -1, 0, 1), lra::Error);
  EXPECT_TRUE(generate({}, 0, 0, 1).empty());
}

TEST(ListOpsGenerator, ExamplesAreValidDistinctAndRoundTrip) {
  for (const GeneratorParams& p : {kSmall, GeneratorParams{}}) {
    const int64_t n = p.max_length == 2000 ? 300 : 2000;
    const auto ex = generate(p, n, 7, 2);
    ASSERT_EQ(static_cast<int64_t>(ex.size()), n);
    std::set<std::string> distinct;
    std::set<int> labels;
    for (const auto& e : ex) {
      const auto len = static_cast<int64_t>(e.codes.size());
      ASSERT_GT(len, p.min_length);
      ASSERT_LT(len, p.max_length);
      ASSERT_EQ(e.label, evaluate(e.codes));
      check_shape(e.codes, p);
      // the text parses back to the same ids
      const auto ids = tokenize(to_source(e.codes));
      ASSERT_EQ(std::string(ids.begin(), ids.end()), e.codes);
      distinct.insert(e.codes);
      labels.insert(e.label);
    }
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), n);
    EXPECT_EQ(labels.size(), 10u);
  }
}

TEST(ListOpsGenerator, DeterministicBySeedNotThreads) {
  const auto a = generate(kSmall, 1500, 42, 1);
  for (int threads : {2, 3, 8}) {
    const auto b = generate(kSmall, 1500, 42, threads);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].codes, b[i].codes) << "threads " << threads << " item " << i;
  }
  // a prefix of a longer run: the count does not change earlier items
  const auto longer = generate(kSmall, 2000, 42, 2);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].codes, longer[i].codes);
  const auto c = generate(kSmall, 1500, 43, 2);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].codes == c[i].codes;
  EXPECT_LT(same, 10u);
}

TEST(ListOpsGenerator, FilesIdenticalAcrossThreadCountsAndSplitSizes) {
  const fs::path d1 = temp_dir("gen1"), d2 = temp_dir("gen2"), d3 = temp_dir("gen3");
  const int64_t total = 1000;
  const SplitSizes s = default_split(total);
  EXPECT_EQ(s.train, 960);
  EXPECT_EQ(s.val, 20);
  EXPECT_EQ(s.test, 20);
  const SplitSizes full = default_split(100000);
  EXPECT_EQ(full.train, 96000);
  EXPECT_EQ(full.val, 2000);
  EXPECT_EQ(full.test, 2000);

  const auto ex = generate(kSmall, total, 5, 1);
  write_dataset(d1.string(), ex, s, "params\n");
  write_dataset(d2.string(), generate(kSmall, total, 5, 4), s);
  write_dataset(d3.string(), generate(kSmall, total, 6, 2), s);
  for (const char* f : {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"}) {
    const std::string a = slurp(d1 / f);
    EXPECT_EQ(a.rfind("Source\tTarget\n", 0), 0u) << f;
    EXPECT_EQ(a, slurp(d2 / f)) << f;
    EXPECT_NE(a, slurp(d3 / f)) << f;
  }
  EXPECT_EQ(slurp(d1 / "params.txt"), "params\n");
  EXPECT_FALSE(fs::exists(d2 / "params.txt"));
  // no temporary folders left beside the outputs
  for (const auto& entry : fs::directory_iterator(d1.parent_path()))
    EXPECT_EQ(entry.path().filename().string().find(d1.filename().string() + ".tmp"), std::string::npos);

  // items in order: first 960 train, next 20 val, last 20 test
  ReadReport rep;
  const auto train = read_tsv((d1 / "basic_train.tsv").string(), &rep);
  const auto val = read_tsv((d1 / "basic_val.tsv").string());
  const auto test = read_tsv((d1 / "basic_test.tsv").string());
  ASSERT_EQ(train.size(), 960u);
  ASSERT_EQ(val.size(), 20u);
  ASSERT_EQ(test.size(), 20u);
  EXPECT_EQ(rep.label_mismatches, 0);
  EXPECT_EQ(rep.oov_tokens, 0);
  auto check = [&](const lra::Split& sp, size_t first) {
    for (size_t i = 0; i < sp.size(); ++i) {
      const auto& e = ex[first + i];
      ASSERT_EQ(sp.labels[i], e.label);
      ASSERT_EQ(std::string(sp.tokens.begin() + sp.offsets[i], sp.tokens.begin() + sp.offsets[i + 1]), e.codes);
    }
  };
  check(train, 0);
  check(val, 960);
  check(test, 980);

  // rewriting into an existing folder replaces the files
  write_dataset(d1.string(), generate(kSmall, total, 6, 2), s);
  EXPECT_EQ(slurp(d1 / "basic_train.tsv"), slurp(d3 / "basic_train.tsv"));
  for (const auto& p : {d1, d2, d3}) fs::remove_all(p);
}

TEST(ListOpsGenerator, SpeedSanity) {
  const fs::path dir = temp_dir("speed");
  const auto t0 = std::chrono::steady_clock::now();
  const auto ex = generate(GeneratorParams{}, 2000, 1, 2);
  const auto t1 = std::chrono::steady_clock::now();
  write_dataset(dir.string(), ex, default_split(2000));
  const auto t2 = std::chrono::steady_clock::now();
  ReadReport rep;
  const auto train = read_tsv((dir / "basic_train.tsv").string(), &rep);
  const auto t3 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("[ info ] 2000 default examples: generate %.0f ms (2 threads), write %.0f ms, read train %.0f ms "
              "(%zu tokens)\n",
              ms(t0, t1), ms(t1, t2), ms(t2, t3), train.tokens.size());
  EXPECT_EQ(train.size(), 1920u);
  EXPECT_EQ(rep.label_mismatches, 0);
  EXPECT_LT(rep.max_tokens, 2000);
  fs::remove_all(dir);
}
