// Pathfinder / Path-X release reader (metadata, PNG decoding, split rule) and
// the task plugins' folder logic (release lookup, generated cache, errors).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lra/task.h"
#include "pathfinder_data.h"
#include "pathfinder_plugin.h"
#include "png_io.h"

namespace fs = std::filesystem;
using namespace lra::pathfinder;
using lra::ErrorKind;

extern "C" const lra_plugin_api* lra_plugin_entry(void);  // pathfinder_task.cpp, compiled into this test

namespace {

// A deterministic test image: pixel p of image `id` is (p * 7 + id * 13) % 256.
lra::tasks::GrayImage test_image(int res, int id) {
  lra::tasks::GrayImage img;
  img.width = img.height = res;
  img.pixels.resize(static_cast<size_t>(res) * res);
  for (size_t p = 0; p < img.pixels.size(); ++p) img.pixels[p] = static_cast<uint8_t>((p * 7 + id * 13) % 256);
  return img;
}

std::vector<int32_t> tokens_of(int res, int id) {
  const auto img = test_image(res, id);
  return std::vector<int32_t>(img.pixels.begin(), img.pixels.end());
}

int label_of(int id) { return (id * 5 + 1) % 3 == 0 ? 1 : 0; }

std::vector<int32_t> example(const lra::Split& s, size_t i) {
  return std::vector<int32_t>(s.tokens.begin() + s.offsets[i], s.tokens.begin() + s.offsets[i + 1]);
}

class PathfinderData : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("lra_pathfinder_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write_text(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }

  // Writes batch `b` of a dataset folder: images first_id, first_id+1, ...
  // (pixels test_image(res, id), label label_of(id)); ids listed in `empty` get
  // a zero-byte file.
  static void write_batch(const fs::path& ds, int b, int count, int first_id, int res = 32,
                          const std::vector<int>& empty = {}) {
    std::string meta;
    for (int i = 0; i < count; ++i) {
      const int id = first_id + i;
      const fs::path img = ds / "imgs" / std::to_string(b) / ("sample_" + std::to_string(i) + ".png");
      fs::create_directories(img.parent_path());
      if (std::find(empty.begin(), empty.end(), id) != empty.end())
        std::ofstream(img, std::ios::binary).flush();
      else
        lra::tasks::write_png_gray(img.string(), test_image(res, id));
      meta += "imgs/" + std::to_string(b) + " sample_" + std::to_string(i) + ".png " + std::to_string(i) + " " +
              std::to_string(label_of(id)) + " 1.0 14 4 2 0.5 1 1\n";
    }
    write_text(ds / "metadata" / (std::to_string(b) + ".npy"), meta);
  }

  // The lra::Error message thrown by fn; expects kind `kind`.
  template <class Fn>
  static std::string error_of(Fn&& fn, ErrorKind kind = ErrorKind::data) {
    try {
      fn();
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  static ReadReport read(const fs::path& ds, lra::Split* tr, lra::Split* va, lra::Split* te, int res = 32,
                         int threads = 2) {
    ReadReport rep;
    read_dataset(ds.string(), res, threads, tr, va, te, &rep);
    return rep;
  }

  fs::path dir_;
};

const lra::TaskPlugin& pathfinder_plugin() {
  return *static_cast<const lra::TaskPlugin*>(lra_plugin_entry()->interface);
}

lra::DataRequest request(const fs::path& root, lra::Params params = {}, bool allow_generate = false,
                         bool enforce_sizes = true) {
  lra::DataRequest r;
  r.data_root = root.string();
  r.params = std::move(params);
  r.threads = 2;
  r.allow_generate = allow_generate;
  r.enforce_sizes = enforce_sizes;
  return r;
}

}  // namespace

TEST(PathfinderSplit, EightyTenTenFloor) {
  auto check = [](int64_t n, int64_t tr, int64_t va, int64_t te) {
    const SplitSizes s = split_sizes(n);
    EXPECT_EQ(s.train, tr) << n;
    EXPECT_EQ(s.val, va) << n;
    EXPECT_EQ(s.test, te) << n;
  };
  check(50, 40, 5, 5);
  check(60, 48, 6, 6);
  check(10, 8, 1, 1);
  check(199999, 159999, 19999, 20001);
  check(200000, 160000, 20000, 20000);
}

TEST(PathfinderHelpers, LookupOrder) {
  EXPECT_EQ(release_candidates("R", 32, "curv_baseline"),
            (std::vector<std::string>{"R/pathfinder32/curv_baseline", "R/lra_release/pathfinder32/curv_baseline",
                                      "R/lra_release/lra_release/pathfinder32/curv_baseline"}));
  EXPECT_EQ(release_candidates("R", 128, "d"),
            (std::vector<std::string>{"R/lra_release/lra_release/pathfinder128/d", "R/lra_release/pathfinder128/d",
                                      "R/pathfinder128/d"}));
}

TEST_F(PathfinderData, MetadataFilesInNumericBatchOrder) {
  for (const char* name : {"10.npy", "2.npy", "0.npy", "1.npy", "combined.npy", "notes.txt"})
    write_text(dir_ / "metadata" / name, "imgs/0 sample_0.png 0 1\n");
  std::vector<std::string> ignored;
  const auto files = list_metadata(dir_.string(), &ignored);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].batch, 0);
  EXPECT_EQ(files[1].batch, 1);
  EXPECT_EQ(files[2].batch, 2);
  EXPECT_EQ(files[3].batch, 10);
  EXPECT_EQ(fs::path(files[3].path).filename(), "10.npy");
  ASSERT_EQ(ignored.size(), 2u);
  EXPECT_EQ(fs::path(ignored[0]).filename(), "combined.npy");
}

TEST_F(PathfinderData, ParsesRowsLabelsFromColumnThree) {
  std::vector<ImageRef> rows;
  parse_metadata(
      "imgs/0 sample_0.png 0 0 1.0 6 2 2 0.5 1 1\r\n\nimgs/43 sample_7.png 7 1 1.8 6 2.0 5 1.5 2 1\nimgs/1 a.png 0 1",
      "M.npy", "DS", &rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, "DS/imgs/0/sample_0.png");
  EXPECT_EQ(rows[0].label, 0);
  EXPECT_EQ(rows[0].where, "M.npy:1");
  EXPECT_EQ(rows[1].path, "DS/imgs/43/sample_7.png");
  EXPECT_EQ(rows[1].label, 1);
  EXPECT_EQ(rows[1].where, "M.npy:3");
  EXPECT_EQ(rows[2].label, 1);
}

TEST_F(PathfinderData, MalformedRowsNameFileAndLine) {
  for (const std::string bad : {"imgs/0 sample_1.png 1", "imgs/0 sample_1.png 1 2 1.0", "imgs/0  sample_1.png 1 1",
                                "imgs/0\tsample_1.png\t1\t1", "imgs/0 sample_1.png 1 yes"}) {
    std::vector<ImageRef> rows;
    const std::string msg =
        error_of([&] { parse_metadata("imgs/0 sample_0.png 0 1\n" + bad + "\n", "/x/metadata/3.npy", "DS", &rows); });
    EXPECT_NE(msg.find("/x/metadata/3.npy:2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  }
}

TEST_F(PathfinderData, TokensArePixelsInBatchOrderSplit80_10_10) {
  // 50 images in batches 0, 1, 2, 10 (written out of order); ids follow the numeric batch order.
  write_batch(dir_, 10, 14, 36);
  write_batch(dir_, 2, 12, 24);
  write_batch(dir_, 0, 12, 0);
  write_batch(dir_, 1, 12, 12);
  lra::Split tr, va, te;
  const ReadReport rep = read(dir_, &tr, &va, &te);
  EXPECT_EQ(rep.rows, 50);
  EXPECT_EQ(rep.empty, 0);
  ASSERT_EQ(tr.size(), 40u);
  ASSERT_EQ(va.size(), 5u);
  ASSERT_EQ(te.size(), 5u);
  const lra::Split* splits[3] = {&tr, &va, &te};
  int id = 0;
  for (const lra::Split* s : splits) {
    ASSERT_EQ(s->offsets.size(), s->size() + 1);
    ASSERT_EQ(s->tokens.size(), s->size() * 1024);
    for (size_t i = 0; i < s->size(); ++i, ++id) {
      EXPECT_EQ(s->offsets[i + 1] - s->offsets[i], 1024);
      EXPECT_EQ(example(*s, i), tokens_of(32, id)) << "image " << id;
      EXPECT_EQ(s->labels[i], label_of(id)) << "image " << id;
    }
  }
  // pixel 0 is an ordinary token, 255 the largest
  EXPECT_EQ(tr.tokens[0], 0);
  EXPECT_EQ(*std::max_element(tr.tokens.begin(), tr.tokens.end()), 255);
}

TEST_F(PathfinderData, ResultDoesNotDependOnThreadCount) {
  write_batch(dir_, 0, 100, 0);
  write_batch(dir_, 1, 100, 100);
  lra::Split a[3], b[3];
  read(dir_, &a[0], &a[1], &a[2], 32, 1);
  read(dir_, &b[0], &b[1], &b[2], 32, 7);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(a[s].tokens, b[s].tokens);
    EXPECT_EQ(a[s].labels, b[s].labels);
  }
}

TEST_F(PathfinderData, EmptyImagesAreSkippedAndCounted) {
  write_batch(dir_, 0, 26, 0, 32, {3});
  write_batch(dir_, 1, 25, 26, 32, {});
  lra::Split tr, va, te;
  const ReadReport rep = read(dir_, &tr, &va, &te);
  EXPECT_EQ(rep.rows, 51);
  EXPECT_EQ(rep.empty, 1);
  EXPECT_EQ(rep.first_empty, (dir_ / "imgs/0/sample_3.png").string());
  ASSERT_EQ(tr.size() + va.size() + te.size(), 50u);
  EXPECT_EQ(tr.size(), 40u);
  EXPECT_EQ(example(tr, 2), tokens_of(32, 2));
  EXPECT_EQ(example(tr, 3), tokens_of(32, 4));  // image 3 is gone
  EXPECT_EQ(example(te, 4), tokens_of(32, 50));
}

TEST_F(PathfinderData, MissingImageIsNamed) {
  write_batch(dir_, 0, 12, 0);
  fs::remove(dir_ / "imgs/0/sample_5.png");
  lra::Split tr, va, te;
  const std::string msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "imgs/0/sample_5.png").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.npy:6"), std::string::npos) << msg;
}

TEST_F(PathfinderData, CorruptPngIsNamed) {
  write_batch(dir_, 0, 12, 0);
  write_text(dir_ / "imgs/0/sample_7.png", "not a png at all");
  lra::Split tr, va, te;
  const std::string msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "imgs/0/sample_7.png").string()), std::string::npos) << msg;
}

TEST_F(PathfinderData, WrongImageSizeIsNamed) {
  write_batch(dir_, 0, 12, 0);
  lra::tasks::write_png_gray((dir_ / "imgs/0/sample_9.png").string(), test_image(16, 0));
  lra::Split tr, va, te;
  const std::string msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "imgs/0/sample_9.png").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("16x16, expected 32x32"), std::string::npos) << msg;
  // a 32x32 folder read as Path-X
  fs::remove(dir_ / "imgs/0/sample_9.png");
  lra::tasks::write_png_gray((dir_ / "imgs/0/sample_9.png").string(), test_image(32, 9));
  const std::string msg2 = error_of([&] { read(dir_, &tr, &va, &te, 128); });
  EXPECT_NE(msg2.find("expected 128x128"), std::string::npos) << msg2;
}

TEST_F(PathfinderData, MissingMetadataFolderOrFiles) {
  lra::Split tr, va, te;
  std::string msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "metadata").string()), std::string::npos) << msg;
  write_text(dir_ / "metadata" / "combined.npy", "imgs/0 sample_0.png 0 1\n");
  msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find("no metadata files"), std::string::npos) << msg;
}

// --- the plugins ------------------------------------------------------------

TEST_F(PathfinderData, PluginDescriptorAndOptions) {
  const lra_plugin_api* api = lra_plugin_entry();
  EXPECT_STREQ(api->info->name, "pathfinder");
  std::vector<lra::OptionSpec> specs;
  ASSERT_TRUE(pathfinder_plugin().data_options(&specs).ok());
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"contour_length", "images", "seed", "distractors"}));
}

TEST_F(PathfinderData, ParamValidationIsARulesError) {
  auto bad = [&](const std::string& key, lra::Value v, const std::string& expect) {
    lra::Dataset d;
    const lra::Status st = pathfinder_plugin().load(request(dir_, {{key, v}}), &d);
    EXPECT_EQ(st.kind, ErrorKind::rules) << st.message;
    EXPECT_NE(st.message.find(key), std::string::npos) << st.message;
    EXPECT_NE(st.message.find(expect), std::string::npos) << st.message;
  };
  bad("contour_length", int64_t{7}, "contour_length = 7 is not valid (valid: 6");
  bad("images", int64_t{5}, "images = 5 is not valid");
  bad("seed", int64_t{-1}, "seed = -1");
  bad("distractors", std::string("sometimes"), "valid: from_contour, from_baseline");
  bad("images", std::string("many"), "must be int");
}

TEST_F(PathfinderData, ReleaseLayoutIsFoundAndPartialDataSaid) {
  const fs::path ds = dir_ / "lra_release" / "pathfinder32" / "curv_contour_length_14";
  write_batch(ds, 0, 20, 0, 32, {4});
  lra::Dataset d;
  const lra::Status st = pathfinder_plugin().load(request(dir_), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d.info.vocab_size, 256);
  EXPECT_EQ(d.info.num_classes, 2);
  EXPECT_EQ(d.info.natural_len, 1024);
  EXPECT_FALSE(d.info.paired);
  EXPECT_EQ(d.train.size() + d.val.size() + d.test.size(), 19u);
  EXPECT_EQ(d.source.rfind(std::string(lra::kLraReleaseSource) + " pathfinder32/curv_contour_length_14 at " + ds.string(), 0), 0u)
      << d.source;
  EXPECT_NE(d.source.find("NOT the full dataset: 20 of 200,000 images"), std::string::npos) << d.source;
  EXPECT_NE(d.source.find("skipped 1 empty image file (first: " + (ds / "imgs/0/sample_4.png").string() + ")"),
            std::string::npos)
      << d.source;
  // contour_length picks the difficulty folder
  lra::Dataset d6;
  const lra::Status st6 = pathfinder_plugin().load(request(dir_, {{"contour_length", int64_t{6}}}), &d6);
  EXPECT_EQ(st6.kind, ErrorKind::data);
  EXPECT_NE(st6.message.find("pathfinder32/curv_baseline"), std::string::npos) << st6.message;
}

TEST_F(PathfinderData, PluginErrorsNameTheFileAndTheRemedy) {
  const fs::path ds = dir_ / "pathfinder32" / "curv_contour_length_14";
  write_batch(ds, 0, 12, 0);
  write_text(ds / "metadata" / "1.npy", "imgs/1 sample_0.png 0 1\nimgs/1 sample_1.png\n");
  lra::Dataset d;
  const lra::Status st = pathfinder_plugin().load(request(dir_), &d);
  EXPECT_EQ(st.kind, ErrorKind::data);
  EXPECT_NE(st.message.find((ds / "metadata" / "1.npy").string() + ":2"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("LRA release"), std::string::npos) << st.message;
}

TEST_F(PathfinderData, PathXPrefersTheInnerOfTwoCopies) {
  // ROOT is the outer lra_release folder: outer copy ROOT/pathfinder128, inner ROOT/lra_release/pathfinder128.
  const std::string diff = "curv_contour_length_14";
  const fs::path outer = dir_ / "pathfinder128" / diff, inner = dir_ / "lra_release" / "pathfinder128" / diff;
  write_batch(outer, 0, 10, 100, 128);
  write_batch(inner, 0, 10, 0, 128);
  const PathXTask pathx;
  lra::Dataset d;
  lra::Status st = pathx.load(request(dir_), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d.info.natural_len, 16384);
  ASSERT_EQ(d.train.size(), 8u);
  EXPECT_EQ(example(d.train, 0), tokens_of(128, 0));
  EXPECT_NE(d.source.find("at " + inner.string() + " (the inner"), std::string::npos) << d.source;
  EXPECT_NE(d.source.find("other copy at " + outer.string() + " was ignored"), std::string::npos) << d.source;
  EXPECT_NE(d.source.find("#38"), std::string::npos) << d.source;

  // ROOT is the extraction folder: outer ROOT/lra_release/pathfinder128, inner ROOT/lra_release/lra_release/...
  const fs::path top = dir_ / "top";
  write_batch(top / "lra_release" / "pathfinder128" / diff, 0, 10, 100, 128);
  write_batch(top / "lra_release" / "lra_release" / "pathfinder128" / diff, 0, 10, 0, 128);
  st = pathx.load(request(top), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(example(d.train, 0), tokens_of(128, 0));
  EXPECT_NE(d.source.find("at " + (top / "lra_release" / "lra_release" / "pathfinder128" / diff).string()),
            std::string::npos)
      << d.source;

  // a single copy: no note
  fs::remove_all(outer);
  st = pathx.load(request(dir_), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d.source.find("ignored"), std::string::npos) << d.source;
}

TEST_F(PathfinderData, NoDataListsEveryPathLookedFor) {
  lra::Dataset d;
  const lra::Status st = pathfinder_plugin().load(request(dir_), &d);
  EXPECT_EQ(st.kind, ErrorKind::data);
  for (const auto& p : release_candidates(dir_.string(), 32, "curv_contour_length_14"))
    EXPECT_NE(st.message.find(p), std::string::npos) << st.message;
  EXPECT_NE(st.message.find((dir_ / "pathfinder" / "gen-").string()), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("lrahost data generate pathfinder --out DIR"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("LRA release"), std::string::npos) << st.message;

  // not the release configuration: only the generated cache is looked for
  const PathXTask pathx;
  const lra::Status st2 = pathx.load(request(dir_, {{"images", int64_t{60}}}), &d);
  EXPECT_EQ(st2.kind, ErrorKind::data);
  EXPECT_EQ(st2.message.find("lra_release"), std::string::npos) << st2.message;
  EXPECT_NE(st2.message.find((dir_ / "pathx" / "gen-").string()), std::string::npos) << st2.message;
  EXPECT_NE(st2.message.find("pathfinder128/curv_contour_length_14"), std::string::npos) << st2.message;
}

TEST_F(PathfinderData, GeneratesCachesAndReusesSmallDatasets) {
  const lra::Params params{{"images", int64_t{60}}, {"seed", int64_t{3}}};
  lra::Dataset d;
  lra::Status st = pathfinder_plugin().load(request(dir_, params, /*allow_generate=*/true), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d.train.size(), 48u);
  EXPECT_EQ(d.val.size(), 6u);
  EXPECT_EQ(d.test.size(), 6u);
  EXPECT_EQ(d.train.tokens.size(), 48u * 1024);
  EXPECT_NE(d.source.find("generated"), std::string::npos) << d.source;
  int positives = 0;
  for (int32_t l : d.train.labels) positives += l;
  EXPECT_GT(positives, 0);
  EXPECT_LT(positives, 48);

  // one cache folder, no staging leftovers
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir_ / "pathfinder")) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].filename().string().rfind("gen-", 0), 0u);
  EXPECT_TRUE(fs::exists(entries[0] / "params.txt"));
  const fs::path meta = entries[0] / "pathfinder32" / "curv_contour_length_14" / "metadata" / "0.npy";
  ASSERT_TRUE(fs::exists(meta));
  const auto stamp = fs::last_write_time(meta);

  // reused (also without generation), identical content
  lra::Dataset d2;
  st = pathfinder_plugin().load(request(dir_, params, /*allow_generate=*/false), &d2);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d2.source, d.source);
  EXPECT_EQ(d2.train.tokens, d.train.tokens);
  EXPECT_EQ(d2.test.labels, d.test.labels);
  EXPECT_EQ(fs::last_write_time(meta), stamp);

  // another seed is another cache folder
  lra::Dataset d3;
  st = pathfinder_plugin().load(request(dir_, {{"images", int64_t{60}}, {"seed", int64_t{4}}}, true), &d3);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_NE(d3.train.tokens, d.train.tokens);
}

TEST_F(PathfinderData, GenerateWritesTheReleaseLayout) {
  ASSERT_TRUE(pathfinder_plugin().generate(dir_.string(), {}, 20, 1, 2).ok());
  const fs::path ds = dir_ / "pathfinder32" / "curv_contour_length_14";
  EXPECT_TRUE(fs::exists(ds / "metadata" / "0.npy"));
  // found as a (partial) release by default parameters
  lra::Dataset d;
  const lra::Status st = pathfinder_plugin().load(request(dir_, {}, false, false), &d);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(d.train.size() + d.val.size() + d.test.size(), 20u);
  EXPECT_NE(d.source.find("NOT the full dataset: 20 of 200,000 images"), std::string::npos) << d.source;
  EXPECT_NE(d.source.find("release layout pathfinder32/curv_contour_length_14 at " + ds.string()), std::string::npos)
      << d.source;
  EXPECT_NE(d.source.find("written by `lrahost data generate` (seed 1, distractors from_contour)"), std::string::npos)
      << d.source;
  EXPECT_EQ(d.source.find("LRA release"), std::string::npos) << d.source;
  // an existing folder is not overwritten
  const lra::Status again = pathfinder_plugin().generate(dir_.string(), {}, 20, 1, 2);
  EXPECT_EQ(again.kind, ErrorKind::usage);
  EXPECT_NE(again.message.find(ds.string()), std::string::npos) << again.message;

  // Path-X: 128x128 images, 16,384 tokens
  const PathXTask pathx;
  ASSERT_TRUE(pathx.generate((dir_ / "px").string(), {{"contour_length", int64_t{6}}}, 10, 2, 2).ok());
  lra::Dataset x;
  const lra::Status stx = pathx.load(request(dir_ / "px", {{"contour_length", int64_t{6}}}, false, false), &x);
  ASSERT_TRUE(stx.ok()) << stx.message;
  EXPECT_NE(x.source.find("pathfinder128/curv_baseline"), std::string::npos) << x.source;
  ASSERT_EQ(x.train.size(), 8u);
  EXPECT_EQ(x.train.tokens.size(), 8u * 16384);
  EXPECT_EQ(x.val.size(), 1u);
  EXPECT_EQ(x.test.size(), 1u);
}

// ---------------------------------------------------------------------------
// Issue 18: paths in metadata rows stay inside the dataset; PNG header sizes are
// checked before any pixel buffer is allocated.

namespace {

TEST_F(PathfinderData, MetadataPathsOutsideTheDatasetAreRefused) {
  for (const std::string bad : {"imgs/0 ../../../x.png", "../.. x.png", "/etc passwd", "imgs/0 /etc/passwd",
                                "imgs/0/../../.. etc/passwd"}) {
    std::vector<ImageRef> rows;
    const std::string msg = error_of(
        [&] { parse_metadata("imgs/0 sample_0.png 0 1\n" + bad + " 1 1\n", "/x/metadata/3.npy", "DS", &rows); });
    EXPECT_NE(msg.find("/x/metadata/3.npy:2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside the dataset folder DS"), std::string::npos) << msg;
    const std::string shown = bad.substr(0, bad.find(' ')) + "/" + bad.substr(bad.find(' ') + 1);
    EXPECT_NE(msg.find("\"" + shown + "\""), std::string::npos) << msg;
  }
  // Inside the folder, ".." that stays inside is fine (and normalised).
  std::vector<ImageRef> rows;
  parse_metadata("imgs/0/../1 sample_0.png 0 1\n", "M.npy", "DS", &rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].path, "DS/imgs/1/sample_0.png");
}

TEST_F(PathfinderData, ReaderDoesNotOpenImagesOutsideTheDataset) {
  // A valid image next to the dataset folder, named by a metadata row: before
  // issue 18 the reader decoded it as part of the dataset.
  write_batch(dir_ / "ds", 0, 12, 0);
  lra::tasks::write_png_gray((dir_ / "outside.png").string(), test_image(32, 3));
  write_text(dir_ / "ds" / "metadata" / "1.npy", "../.. outside.png 0 1 1.0 14 4 2 0.5 1 1\n");
  lra::Split tr, va, te;
  const std::string msg = error_of([&] { read(dir_ / "ds", &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "ds" / "metadata" / "1.npy").string() + ":1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"../../outside.png\""), std::string::npos) << msg;
}

// A PNG whose IHDR claims width x height (valid signature, chunk and CRC; no pixel data).
std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height) {
  auto crc32 = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
  };
  auto be32 = [](std::vector<uint8_t>& v, uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  be32(png, 13);
  const size_t type_at = png.size();
  png.insert(png.end(), {'I', 'H', 'D', 'R'});
  be32(png, width);
  be32(png, height);
  png.insert(png.end(), {8, 0, 0, 0, 0});  // 8-bit gray
  be32(png, crc32(png.data() + type_at, png.size() - type_at));
  return png;
}

TEST(PngHeader, HugeSizesAreRefusedBeforeDecoding) {
  for (const auto& [w, h] : std::vector<std::pair<uint32_t, uint32_t>>{
           {40000, 40000}, {0x7fffffffu, 0x7fffffffu}, {0x80000000u, 0x80000000u}, {32, 100000}}) {
    const auto png = png_header_only(w, h);
    const std::string dims = std::to_string(w) + "x" + std::to_string(h);
    try {
      lra::tasks::decode_png_gray(png.data(), png.size(), "big.png");
      ADD_FAILURE() << dims << " accepted";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
      EXPECT_NE(std::string(e.what()).find("big.png"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dims), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("4096 per side"), std::string::npos) << e.what();
    }
    EXPECT_THROW(lra::tasks::read_png_size(png.data(), png.size(), "big.png"), lra::Error);
  }
  // Within the limit the header alone is read (nothing decoded).
  const auto ok = png_header_only(128, 64);
  const auto size = lra::tasks::read_png_size(ok.data(), ok.size(), "h.png");
  EXPECT_EQ(size.width, 128);
  EXPECT_EQ(size.height, 64);
}

TEST(PngHeader, ExpectedSizeIsCheckedBeforeDecoding) {
  const auto png = lra::tasks::encode_png_gray(test_image(16, 1));
  const auto img = lra::tasks::decode_png_gray(png.data(), png.size(), "a.png", {16, 16});
  EXPECT_EQ(img.pixels.size(), 256u);
  try {
    lra::tasks::decode_png_gray(png.data(), png.size(), "a.png", {32, 32});
    ADD_FAILURE() << "a 16x16 image accepted as 32x32";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("a.png: the image is 16x16, expected 32x32"), std::string::npos) << e.what();
  }
}

TEST_F(PathfinderData, HugePngHeaderInADatasetIsNamed) {
  write_batch(dir_, 0, 12, 0);
  const auto png = png_header_only(40000, 40000);
  std::ofstream(dir_ / "imgs/0/sample_4.png", std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  lra::Split tr, va, te;
  const std::string msg = error_of([&] { read(dir_, &tr, &va, &te); });
  EXPECT_NE(msg.find((dir_ / "imgs/0/sample_4.png").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("40000x40000"), std::string::npos) << msg;
}

}  // namespace
