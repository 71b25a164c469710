// Image (CIFAR-10 grayscale): LRA's grayscale formula, record layout, the
// 90/10 train/validation rule, subsets, and errors naming file and record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cifar_reader.h"
#include "data_fixtures.h"
#include "lra/task.h"
#include "task_util.h"

namespace fs = std::filesystem;
using namespace lra::image;
using lra::tasks::choose_subset;

extern "C" const lra_plugin_api* lra_plugin_entry(void);  // image_task.cpp, compiled into this test

namespace {

const lra::TaskPlugin& plugin() { return *static_cast<const lra::TaskPlugin*>(lra_plugin_entry()->interface); }

// An independent float32 evaluation: volatile forces every step to be rounded to float.
int reference_gray(int r, int g, int b) {
  volatile float s = static_cast<float>(1.0 / 255.0);
  volatile float fr = static_cast<float>(r) * s, fg = static_cast<float>(g) * s, fb = static_cast<float>(b) * s;
  volatile float pr = 0.2989f * fr, pg = 0.5870f * fg, pb = 0.1140f * fb;
  volatile float y = pr + pg;
  y = y + pb;
  volatile float scaled = y * 255.5f;
  const int v = static_cast<int>(scaled);
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The 1024 gray ids and the label of record `r` of a batch file, from its bytes.
std::pair<std::vector<int32_t>, int32_t> decode(const fs::path& file, int64_t r) {
  const std::string bytes = read_all(file);
  const auto* rec = reinterpret_cast<const unsigned char*>(bytes.data()) + r * kRecordBytes;
  std::vector<int32_t> gray(kPixels);
  for (int p = 0; p < kPixels; ++p) gray[p] = reference_gray(rec[1 + p], rec[1 + 1024 + p], rec[1 + 2048 + p]);
  return {gray, rec[0]};
}

std::vector<int32_t> example(const lra::Split& s, size_t i) {
  return {s.tokens.begin() + s.offsets[i], s.tokens.begin() + s.offsets[i + 1]};
}

class ImageTask : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("lra_image_task_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  lra::Status load(const lra::Params& params, lra::Dataset* ds, int threads = 1) {
    lra::DataRequest req;
    req.data_root = (dir_ / "root").string();
    req.params = params;
    req.threads = threads;
    req.allow_generate = false;
    return plugin().load(req, ds);
  }
  fs::path bin(const std::string& name) const { return dir_ / "root" / "cifar-10-batches-bin" / name; }

  fs::path dir_;
};

}  // namespace

TEST(ImageGray, MatchesTensorFlowFloat32Formula) {
  EXPECT_EQ(to_gray(0, 0, 0), 0);
  EXPECT_EQ(to_gray(255, 255, 255), 255);      // 0.9999 * 255.5 = 255.47
  EXPECT_EQ(to_gray(255, 0, 0), 76);           // 0.2989 * 255.5 = 76.37
  EXPECT_EQ(to_gray(0, 255, 0), 149);          // 0.5870 * 255.5 = 149.98: truncated, not rounded
  EXPECT_EQ(to_gray(0, 0, 255), 29);           // 0.1140 * 255.5 = 29.13
  EXPECT_EQ(to_gray(128, 128, 128), 128);      // 0.50176 * 0.9999 * 255.5 = 128.19
  EXPECT_EQ(to_gray(1, 1, 1), 1);              // truncation, not rounding: 1.0019
  EXPECT_EQ(to_gray(100, 150, 200), 141);      // (0.11722 + 0.34530 + 0.08941) * 255.5 = 141.02
  for (int r = 0; r < 256; r += 3)
    for (int g = 0; g < 256; g += 5)
      for (int b = 0; b < 256; b += 7) ASSERT_EQ(to_gray(r, g, b), reference_gray(r, g, b)) << r << "," << g << "," << b;
  for (int v = 0; v < 256; ++v) {
    ASSERT_EQ(to_gray(v, v, v), reference_gray(v, v, v)) << v;
    ASSERT_LE(std::abs(to_gray(v, v, v) - v), 1) << v;
  }
}

TEST_F(ImageTask, NinetyTenSplitInFileOrder) {
  lra::test::write_cifar_fixture(dir_ / "root", 20, 30, 4);
  EXPECT_EQ(fs::file_size(bin("data_batch_1.bin")), 20u * 3073u);
  EXPECT_EQ(record_count(bin("test_batch.bin").string()), 30);
  lra::Dataset ds;
  lra::Status st = load({}, &ds);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(ds.info.vocab_size, 256);
  EXPECT_EQ(ds.info.num_classes, 10);
  EXPECT_EQ(ds.info.natural_len, 1024);
  EXPECT_FALSE(ds.info.paired);
  ASSERT_EQ(ds.train.size(), 90u);  // floor(90% of 100)
  ASSERT_EQ(ds.val.size(), 10u);
  ASSERT_EQ(ds.test.size(), 30u);
  for (const lra::Split* s : {&ds.train, &ds.val, &ds.test})
    for (size_t i = 0; i < s->size(); ++i) ASSERT_EQ(s->offsets[i + 1] - s->offsets[i], 1024);
  EXPECT_TRUE(ds.train.tokens2.empty());

  // train: batches 1-4 and the first 10 records of batch 5; validation: its last 10
  auto expect_record = [&](const lra::Split& s, size_t i, const std::string& file, int64_t r) {
    const auto [gray, label] = decode(bin(file), r);
    EXPECT_EQ(example(s, i), gray) << file << " record " << r;
    EXPECT_EQ(s.labels[i], label) << file << " record " << r;
  };
  expect_record(ds.train, 0, "data_batch_1.bin", 0);
  expect_record(ds.train, 19, "data_batch_1.bin", 19);
  expect_record(ds.train, 20, "data_batch_2.bin", 0);
  expect_record(ds.train, 89, "data_batch_5.bin", 9);
  expect_record(ds.val, 0, "data_batch_5.bin", 10);
  expect_record(ds.val, 9, "data_batch_5.bin", 19);
  expect_record(ds.test, 29, "test_batch.bin", 29);

  // the fixture's classes are balanced and brightness follows the class
  std::vector<int> per_class(10);
  for (int32_t l : ds.test.labels) ++per_class[l];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 3) << c;
  auto mean = [&](const lra::Split& s, size_t i) {
    double m = 0;
    for (int32_t v : example(s, i)) m += v;
    return m / 1024;
  };
  for (size_t i = 0; i < ds.test.size(); ++i)
    EXPECT_NEAR(mean(ds.test, i), 20 + 22 * ds.test.labels[i] + (235 - 20 - 22 * ds.test.labels[i]) * 96 / 1024.0, 3);

  EXPECT_NE(ds.source.find("NOT the full dataset: the files hold 100 of 50,000 training records, 30 of 10,000 test"),
            std::string::npos)
      << ds.source;
  EXPECT_NE(ds.source.find("TFDS"), std::string::npos) << ds.source;

  lra::Dataset threaded;
  ASSERT_TRUE(load({}, &threaded, 4).ok());
  EXPECT_EQ(threaded.train.tokens, ds.train.tokens);
  EXPECT_EQ(threaded.val.labels, ds.val.labels);

  // subsets: chosen records in file order
  lra::Dataset sub;
  st = load({{"train_examples", int64_t{30}}, {"eval_examples", int64_t{4}}, {"seed", int64_t{9}}}, &sub);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_EQ(sub.train.size(), 30u);
  ASSERT_EQ(sub.val.size(), 4u);
  ASSERT_EQ(sub.test.size(), 4u);
  const auto pick = choose_subset(90, 30, 9);
  for (size_t k = 0; k < pick.size(); ++k) EXPECT_EQ(example(sub.train, k), example(ds.train, pick[k])) << k;
  const auto vpick = choose_subset(10, 4, 9);
  for (size_t k = 0; k < vpick.size(); ++k) EXPECT_EQ(sub.val.labels[k], ds.val.labels[vpick[k]]) << k;
  EXPECT_NE(sub.source.find("subset (seed 9): 30 of 90 training images, 4 of 10 validation images, 4 of 30 test"),
            std::string::npos)
      << sub.source;
}

TEST_F(ImageTask, UnevenCountsAndRootHoldingTheFiles) {
  lra::test::write_cifar_fixture(dir_ / "src", 5, 7, 1);
  fs::create_directories(dir_ / "root");
  for (const auto& name : file_names())
    fs::copy_file(dir_ / "src" / "cifar-10-batches-bin" / name, dir_ / "root" / name);
  lra::test::resize_file(dir_ / "root" / "data_batch_2.bin", 3 * 3073);  // 23 records in all
  lra::Dataset ds;
  lra::Status st = load({}, &ds);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(ds.train.size(), 20u);  // floor(0.9 * 23)
  EXPECT_EQ(ds.val.size(), 3u);
  EXPECT_EQ(ds.test.size(), 7u);
  EXPECT_EQ(find_cifar_dir(dir_ / "root"), dir_ / "root");
}

TEST_F(ImageTask, MissingFilesAreListed) {
  lra::Dataset ds;
  lra::Status st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find((dir_ / "root" / "cifar-10-batches-bin").string()), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("data_batch_1.bin"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("cifar-10-binary.tar.gz"), std::string::npos) << st.message;

  lra::test::write_cifar_fixture(dir_ / "root", 2, 2, 1);
  fs::remove(bin("test_batch.bin"));
  st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find("missing " + bin("test_batch.bin").string()), std::string::npos) << st.message;
}

TEST_F(ImageTask, BadSizeAndBadLabelNameFileAndRecord) {
  lra::test::write_cifar_fixture(dir_ / "root", 20, 10, 2);
  lra::test::append_file(bin("data_batch_3.bin"), "xyzzy");
  lra::Dataset ds;
  lra::Status st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find(bin("data_batch_3.bin").string() + " has 61465 bytes"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("3073"), std::string::npos) << st.message;

  lra::test::resize_file(bin("data_batch_3.bin"), 20 * 3073);
  lra::test::set_byte(bin("data_batch_2.bin"), 7 * 3073, 10);
  lra::test::set_byte(bin("data_batch_4.bin"), 3 * 3073, 200);
  for (int threads : {1, 6}) {
    st = load({{"train_examples", int64_t{5}}}, &ds, threads);  // records outside a subset are still checked
    EXPECT_EQ(st.kind, lra::ErrorKind::data);
    EXPECT_NE(st.message.find(bin("data_batch_2.bin").string() + ": record 7"), std::string::npos) << st.message;
    EXPECT_NE(st.message.find("label byte 10"), std::string::npos) << st.message;
  }
  lra::test::resize_file(bin("test_batch.bin"), 0);
  st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data);
  EXPECT_NE(st.message.find(bin("test_batch.bin").string() + " has 0 bytes"), std::string::npos) << st.message;
}

TEST_F(ImageTask, OptionsRulesAndNoGenerator) {
  std::vector<lra::OptionSpec> specs;
  ASSERT_TRUE(plugin().data_options(&specs).ok());
  EXPECT_EQ(specs.size(), 3u);
  lra::Dataset ds;
  EXPECT_EQ(load({{"train_examples", int64_t{-1}}}, &ds).kind, lra::ErrorKind::rules);
  lra::Status st = plugin().generate((dir_ / "out").string(), {}, 100, 0, 1);
  EXPECT_EQ(st.kind, lra::ErrorKind::usage);
  EXPECT_NE(st.message.find("cifar-10-binary.tar.gz"), std::string::npos) << st.message;
}

// Issue 18: a 9 GB batch file (a multiple of the 3073-byte record) is refused on
// its size before anything is allocated for its records (it ended in a bare
// std::bad_alloc). The file is sparse: no disk space is used.
TEST_F(ImageTask, BatchFileLargerThanAFullBatchIsRefusedOnItsSize) {
  lra::test::write_cifar_fixture(dir_ / "root", 20, 30, 4);
  const uintmax_t huge = 3000000ull * 3073ull;  // 9.2 GB
  fs::resize_file(bin("data_batch_3.bin"), huge);
  try {
    record_count(bin("data_batch_3.bin").string());
    ADD_FAILURE() << "a 9 GB batch file accepted";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(bin("data_batch_3.bin").string() + " has " + std::to_string(huge) + " bytes"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("30,730,000 bytes"), std::string::npos) << msg;
  }
  lra::Dataset ds;
  const lra::Status st = load({}, &ds);
  EXPECT_EQ(st.kind, lra::ErrorKind::data) << st.message;
  EXPECT_NE(st.message.find("more than a CIFAR-10 batch file holds"), std::string::npos) << st.message;
  // Exactly a full batch is still read.
  fs::resize_file(bin("data_batch_3.bin"), 10000ull * 3073ull);
  EXPECT_EQ(record_count(bin("data_batch_3.bin").string()), 10000);
}
