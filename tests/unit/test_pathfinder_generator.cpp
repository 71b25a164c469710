// The Pathfinder / Path-X generator: raster primitives, snake-growing pieces,
// LRA parameters, determinism, the release layout, and image statistics
// against the original generator's measured statistics (docs/data.md, "The
// generator: faithfulness and speed").
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "board.h"
#include "generator.h"
#include "lra/status.h"
#include "paddle_kit.h"
#include "png_io.h"
#include "raster.h"

namespace fs = std::filesystem;
using namespace lra::pathfinder;
using lra::ErrorKind;

namespace {

// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("lra_pf_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class Fn>
void expect_error(ErrorKind kind, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no lra::Error thrown";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
  }
}

}  // namespace

// ---------------------------------------------------------------- raster

TEST(PathfinderRaster, BytescaleMapsMinToZeroMaxTo255WithHalfUpTruncation) {
  const std::vector<double> v{0.0, 0.5, 1.0, 0.2, 0.25};
  std::vector<uint8_t> out(v.size());
  bytescale(v.data(), v.size(), out.data());
  // 0.2 * 255 = 51 -> 51.5 -> 51; 0.25 * 255 = 63.75 -> 64.25 -> 64; 0.5 -> 127.5 + 0.5 -> 128
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 128, 255, 51, 64}));
  const std::vector<double> shifted{2.0, 3.0, 4.0};  // the minimum maps to 0, not the value 0
  std::vector<uint8_t> s(3);
  bytescale(shifted.data(), 3, s.data());
  EXPECT_EQ(s, (std::vector<uint8_t>{0, 128, 255}));
  const std::vector<double> flat(5, 0.7);  // constant: divisor 1, everything 0
  std::vector<uint8_t> f(5, 9);
  bytescale(flat.data(), 5, f.data());
  EXPECT_EQ(f, std::vector<uint8_t>(5, 0));
}

TEST(PathfinderRaster, LanczosOfAConstantImageStaysConstant) {
  for (auto [in, out] : {std::pair{17, 9}, std::pair{64, 32}, std::pair{41, 21}, std::pair{256, 128}}) {
    const LanczosAxis a = lanczos_axis(in, out);
    for (int v : {1, 77, 200, 255}) {
      std::vector<uint8_t> src(static_cast<size_t>(in) * in, static_cast<uint8_t>(v)),
          dst(static_cast<size_t>(out) * out, 0), scratch;
      resize_window_max(src.data(), 0, 0, in, in, a, a, dst.data(), &scratch);
      for (uint8_t d : dst) ASSERT_EQ(d, v) << in << "->" << out;
    }
  }
}

TEST(PathfinderRaster, LanczosSupportWidensWithTheDownscaleFactor) {
  const LanczosAxis a = lanczos_axis(64, 32);  // factor 2: support 6 input px each side
  EXPECT_EQ(a.ksize, 13);
  EXPECT_EQ(a.first[10], 15);  // centre 21: taps 15..26
  EXPECT_EQ(a.count[10], 12);
  EXPECT_EQ(a.first[0], 0);  // clipped at the border and renormalised
  int64_t sum = 0;
  for (int k = 0; k < a.count[0]; ++k) sum += a.k[k];
  EXPECT_NEAR(static_cast<double>(sum), 1 << 22, 2.0);
}

TEST(PathfinderRaster, DiskElementSizes) {
  EXPECT_EQ(disk_offsets(0).size(), 1u);
  EXPECT_EQ(disk_offsets(1).size(), 5u);
  EXPECT_EQ(disk_offsets(2).size(), 13u);
  EXPECT_EQ(disk_offsets(3).size(), 29u);
  EXPECT_EQ(disk_offsets(6).size(), 113u);
  std::vector<uint8_t> src(81, 0), dst(81);
  src[4 * 9 + 4] = 255;
  dilate(src.data(), 9, 9, disk_offsets(2), dst.data());
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 255), 13);
}

TEST(PathfinderRaster, LinesFollowPillow) {
  std::vector<uint8_t> c(100, 0);
  draw_line(c.data(), 10, 10, 2, 3, 6, 3, 1);  // width 1: both ends drawn
  EXPECT_EQ(std::count(c.begin(), c.end(), 255), 5);
  for (int x = 2; x <= 6; ++x) EXPECT_EQ(c[3 * 10 + x], 255);
  std::fill(c.begin(), c.end(), 0);
  draw_line(c.data(), 10, 10, 1, 1, 4, 3, 1);  // diagonal Bresenham: one pixel per column
  EXPECT_EQ(std::count(c.begin(), c.end(), 255), 4);
  std::fill(c.begin(), c.end(), 0);
  draw_line(c.data(), 10, 10, 2, 5, 7, 5, 3);  // width 3: three rows
  for (int y = 4; y <= 6; ++y) EXPECT_EQ(c[y * 10 + 4], 255) << y;
  EXPECT_EQ(c[3 * 10 + 4], 0);
  EXPECT_EQ(c[7 * 10 + 4], 0);
}

TEST(PathfinderRaster, MarkerMatchesPillowThroughTheReferenceCode) {
  // The reference's draw_circle((32, 32), (10, 20), 1.5, aa 2), rows 8-12,
  // columns 17-23, as produced by Pillow's Lanczos: the disk is centred on
  // hi-res pixel (20, 40), half an output pixel up-left of output (10, 20).
  const uint8_t want[5][7] = {{0, 0, 28, 65, 3, 1, 0},
                              {0, 28, 228, 254, 133, 2, 4},
                              {0, 66, 255, 255, 190, 6, 3},
                              {0, 0, 132, 178, 55, 1, 3},
                              {0, 1, 0, 0, 0, 1, 0}};
  const LanczosAxis a = lanczos_axis(64, 32);
  std::vector<uint8_t> out(32 * 32, 0), scratch;
  draw_marker(32, 32, 2, 10, 20, 1.5, a, a, out.data(), &scratch);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x) EXPECT_EQ(out[(y + 8) * 32 + x + 17], want[y][x]) << y << "," << x;
  EXPECT_EQ(out[0], 0);
  std::vector<uint8_t> off(32 * 32, 0);
  draw_marker(32, 32, 2, -20, -20, 1.5, a, a, off.data(), &scratch);  // entirely off the canvas
  EXPECT_EQ(std::count(off.begin(), off.end(), 0), 32 * 32);
}

// ------------------------------------------------------------ paddles, board

TEST(PathfinderPaddles, StampsAndCandidates) {
  const PaddleKit kit({32, 2, 0.5, 1, 2, 1.0});
  const auto& s = kit.seed(0);
  ASSERT_NE(s.stamp, nullptr);
  // The 0- and 30-degree paddles of the reference's draw_line_n_mask (Pillow
  // line + OpenCV dilation + Pillow Lanczos), dash then mask, 9x9 patches, as
  // printed by the reference code run with Pillow 9.4 and OpenCV 4.6.
  auto patch = [](const std::vector<Tap>& taps) {
    std::vector<int> p(81, 0);
    for (const Tap& t : taps) p[(t.dy + 4) * 9 + t.dx + 4] = t.q;
    return p;
  };
  const std::vector<int> dash0 = patch(s.stamp->dash);
  const std::vector<int> row4{0, 0, 2, 0, 102, 135, 116, 0, 0};
  EXPECT_EQ(std::vector<int>(dash0.begin() + 36, dash0.begin() + 45), row4);
  EXPECT_EQ(std::count(dash0.begin(), dash0.end(), 0), 81 - 4);
  const std::vector<int> mask0 = patch(s.stamp->mask);
  const std::vector<int> mrow3{0, 1, 2, 20, 173, 204, 186, 28, 0}, mrow4{0, 3, 0, 155, 255, 255, 255, 183, 3};
  EXPECT_EQ(std::vector<int>(mask0.begin() + 27, mask0.begin() + 36), mrow3);
  EXPECT_EQ(std::vector<int>(mask0.begin() + 36, mask0.begin() + 45), mrow4);
  const std::vector<int> dash30 = patch(kit.seed(30).stamp->dash);
  const std::vector<int> d30row5{0, 0, 1, 1, 24, 105, 121, 1, 0};
  EXPECT_EQ(std::vector<int>(dash30.begin() + 45, dash30.begin() + 54), d30row5);
  const std::vector<int> mask30 = patch(kit.seed(30).stamp->mask);
  const std::vector<int> m30row6{0, 0, 1, 0, 13, 118, 206, 38, 0};
  EXPECT_EQ(std::vector<int>(mask30.begin() + 54, mask30.begin() + 63), m30row6);
  // The seed element: the saturated mask pixels shifted by (1, 1).
  ASSERT_EQ(s.shape.size(), 3u);
  EXPECT_EQ(s.shape[0].dy, 1);
  EXPECT_EQ(s.shape[0].dx, 1);
  // Candidates on the circle of radius L+m = 3: unique, sorted, all within reach.
  const auto& c = kit.circle();
  ASSERT_GT(c.size(), 10u);
  for (size_t i = 1; i < c.size(); ++i)
    EXPECT_LT(std::make_pair(c[i - 1].dy, c[i - 1].dx), std::make_pair(c[i].dy, c[i].dx));
  for (const auto& k : c) EXPECT_LE(k.dy * k.dy + k.dx * k.dx, 9 + 9);
  // Continuity 1.0: straight on has weight 1, turning back none.
  int ahead = -1, behind = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].dy == 0 && c[i].dx == 3) ahead = static_cast<int>(i);
    if (c[i].dy == 0 && c[i].dx == -3) behind = static_cast<int>(i);
  }
  ASSERT_GE(ahead, 0);
  ASSERT_GE(behind, 0);
  EXPECT_DOUBLE_EQ(kit.turn_weight(0 + 180, ahead), 1.0);  // seed heading 0 degrees
  EXPECT_EQ(kit.turn_weight(0 + 180, behind), 0.0);
  EXPECT_DOUBLE_EQ(kit.turn_weight(PaddleKit::kSeedHeadings + behind, behind), 1.0);
  expect_error(ErrorKind::usage, [] { PaddleKit({32, 2, 0.7, 1, 2, 1.0}); });  // 0.7 * 2 is not an integer
}

TEST(PathfinderBoard, FreeTailsFollowOpenCvIncludingItsEdgeQuirk) {
  Board b;
  b.reset(16, 16, 1);
  // Element {(0,0)}: free = unoccupied and outside the 2-px band.
  EXPECT_EQ(b.free_tails({{0, 0}}, 2), 12 * 12);
  // {(0,0),(0,1)}: the right-most free column loses its right neighbour to the band.
  EXPECT_EQ(b.free_tails({{0, 0}, {0, 1}}, 2), 12 * 11);
  auto [y, x] = b.nth_tail(0);
  EXPECT_EQ(y, 2);
  EXPECT_EQ(x, 2);
  // {(1,1)} reaches no pixel from the last row/column: OpenCV leaves -DBL_MAX
  // there and the reference then finds nothing free at all.
  EXPECT_EQ(b.free_tails({{1, 1}}, 2), 0);
  EXPECT_EQ(b.free_tails({{1, 1}, {0, 0}}, 2), 11 * 11);
}

TEST(PathfinderBoard, MergeFitsAndRollback) {
  const PaddleKit kit({32, 2, 0.5, 1, 2, 1.0});
  Board b;
  b.reset(32, 32, 1);
  const int64_t free0 = b.free_pixels();
  EXPECT_EQ(free0, 30 * 30);
  const Stamp& s = *kit.seed(0).stamp;
  EXPECT_TRUE(b.fits(s, 16, 16, kit));
  const size_t mark = b.mark();
  b.merge(s, 16, 16, kit);
  EXPECT_LT(b.free_pixels(), free0);
  EXPECT_FALSE(b.fits(s, 16, 16, kit));  // the same paddle again overlaps (1 + 1 >= 1.8)
  EXPECT_DOUBLE_EQ(b.dilated_at(16, 15, kit), 1.0);
  b.rollback(mark);
  EXPECT_EQ(b.free_pixels(), free0);
  EXPECT_TRUE(b.fits(s, 16, 16, kit));
  EXPECT_DOUBLE_EQ(b.dilated_at(16, 16, kit), 0.0);
  EXPECT_DOUBLE_EQ(b.dilated_at(1, 16, kit), 1.0);  // next to the border
}

// ------------------------------------------------------------- configuration

TEST(PathfinderConfig, LraParameters) {
  const auto p = lra_config(32, 14);
  EXPECT_EQ(p.window, 32);
  EXPECT_EQ(p.paddle_length, 2);
  EXPECT_EQ(p.distractor_length, 4);
  EXPECT_DOUBLE_EQ(p.num_distractors, 5);
  EXPECT_EQ(p.margins, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(lra_config(32, 14, DistractorReading::from_baseline).num_distractors, 10);
  EXPECT_DOUBLE_EQ(lra_config(32, 6).num_distractors, 10);
  EXPECT_EQ(lra_config(32, 9).distractor_length, 3);
  EXPECT_DOUBLE_EQ(lra_config(32, 9).num_distractors, 6);

  const auto x = lra_config(128, 14);
  EXPECT_EQ(x.window, 128);
  EXPECT_EQ(x.margins, (std::vector<int>{2, 3}));
  EXPECT_EQ(x.paddle_length, 5);
  EXPECT_DOUBLE_EQ(x.paddle_thickness, 1.5);
  EXPECT_DOUBLE_EQ(x.continuity, 1.8);
  EXPECT_EQ(x.distractor_length, 4);
  EXPECT_EQ(std::ceil(x.num_distractors), 8);                                                     // reading (b)
  EXPECT_DOUBLE_EQ(lra_config(128, 14, DistractorReading::from_baseline).num_distractors, 17.5);  // -> 18 snakes

  EXPECT_EQ(difficulty_dir(6), "curv_baseline");
  EXPECT_EQ(difficulty_dir(9), "curv_contour_length_9");
  EXPECT_EQ(difficulty_dir(14), "curv_contour_length_14");
  expect_error(ErrorKind::usage, [] { lra_config(64, 14); });
  expect_error(ErrorKind::usage, [] { lra_config(32, 10); });
  expect_error(ErrorKind::usage, [] { difficulty_dir(7); });
  auto bad = lra_config(32, 14);
  bad.paddle_thickness = 0.7;
  expect_error(ErrorKind::usage, [&] { generate_image(bad, 1, 0); });
  bad = lra_config(32, 14);
  bad.margins.clear();
  expect_error(ErrorKind::usage, [&] { validate(bad); });
}

TEST(PathfinderConfig, MetadataRows) {
  Sample s;
  s.label = 0;
  s.margin = 1;
  EXPECT_EQ(metadata_row(lra_config(32, 14), 0, 0, s), "imgs/0 sample_0.png 0 0 1.0 14 4 2 0.5 1 1");
  s.margin = 2;
  EXPECT_EQ(metadata_row(lra_config(128, 6), 43, 0, s), "imgs/43 sample_0.png 0 0 1.8 6 2.0 5 1.5 2 1");
  s.label = 1;
  s.margin = 1;
  EXPECT_EQ(metadata_row(lra_config(32, 6), 7, 999, s), "imgs/7 sample_999.png 999 1 1.0 6 2 2 0.5 1 1");
}

// --------------------------------------------------------------- determinism

TEST(PathfinderGenerator, PureFunctionOfSeedAndIndex) {
  const auto cfg = lra_config(32, 14);
  const Sample a = generate_image(cfg, 42, 17);
  // Another image in between must not matter (no hidden state).
  generate_image(cfg, 42, 3);
  const Sample b = generate_image(cfg, 42, 17);
  EXPECT_EQ(a.image.pixels, b.image.pixels);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.margin, b.margin);
  EXPECT_NE(a.image.pixels, generate_image(cfg, 43, 17).image.pixels);
  EXPECT_NE(a.image.pixels, generate_image(cfg, 42, 18).image.pixels);
  // ...and from another thread.
  Sample c;
  std::thread([&] { c = generate_image(cfg, 42, 17); }).join();
  EXPECT_EQ(a.image.pixels, c.image.pixels);
  const auto x = lra_config(128, 14);
  EXPECT_EQ(generate_image(x, 5, 1).image.pixels, generate_image(x, 5, 1).image.pixels);
}

TEST(PathfinderRelease, LayoutMetadataAndThreadIndependence) {
  TempDir tmp("release");
  const auto cfg = lra_config(32, 14);
  const fs::path one = tmp.path / "one", three = tmp.path / "three";
  int64_t last = -1;
  write_release(one.string(), cfg, 10, 4, 9, 1, [&](int64_t done) { last = done; });
  EXPECT_EQ(last, 10);
  write_release(three.string(), cfg, 10, 4, 9, 3);

  // 3 batches of 4, 4, 2 images; same bytes for any thread count.
  for (int b = 0; b < 3; ++b) {
    const int n = b < 2 ? 4 : 2;
    for (int i = 0; i < n; ++i) {
      const fs::path rel = fs::path("imgs") / std::to_string(b) / ("sample_" + std::to_string(i) + ".png");
      ASSERT_TRUE(fs::exists(one / rel)) << rel;
      EXPECT_EQ(slurp(one / rel), slurp(three / rel)) << rel;
      const auto img = lra::tasks::read_png_gray((one / rel).string());
      EXPECT_EQ(img.pixels, generate_image(cfg, 9, static_cast<uint64_t>(b * 4 + i)).image.pixels);
    }
    EXPECT_FALSE(fs::exists(one / "imgs" / std::to_string(b) / ("sample_" + std::to_string(n) + ".png")));
    const fs::path meta = fs::path("metadata") / (std::to_string(b) + ".npy");
    const std::string text = slurp(one / meta);
    EXPECT_EQ(text, slurp(three / meta));
    std::istringstream rows(text);
    std::string row;
    int i = 0;
    while (std::getline(rows, row)) {
      const Sample s = generate_image(cfg, 9, static_cast<uint64_t>(b * 4 + i));
      EXPECT_EQ(row, metadata_row(cfg, b, i, s));
      EXPECT_EQ(
          row.rfind("imgs/" + std::to_string(b) + " sample_" + std::to_string(i) + ".png " + std::to_string(i) + " ",
                    0),
          0u);
      ++i;
    }
    EXPECT_EQ(i, n);
    EXPECT_EQ(text.back(), '\n');
  }
  EXPECT_FALSE(fs::exists(one / "metadata" / "3.npy"));
  for (const auto& e : fs::recursive_directory_iterator(one))
    EXPECT_EQ(e.path().string().find(".partial"), std::string::npos) << e.path();
}

TEST(PathfinderRelease, RefusesToOverwriteABatch) {
  TempDir tmp("refuse");
  const auto cfg = lra_config(32, 14);
  write_release(tmp.path.string(), cfg, 3, 10, 1, 2);
  try {
    write_release(tmp.path.string(), cfg, 3, 10, 1, 2);
    ADD_FAILURE() << "second write accepted";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("metadata/0.npy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  expect_error(ErrorKind::usage, [&] { write_release((tmp.path / "x").string(), cfg, 3, 0, 1, 1); });
  // An output path below a regular file cannot be created: a data error naming it.
  std::ofstream((tmp.path / "file").string()) << "x";
  expect_error(ErrorKind::data, [&] { write_release((tmp.path / "file" / "ds").string(), cfg, 1, 1, 1, 1); });
}

// ---------------------------------------------------------------- statistics

namespace {

struct Stats {
  double mean = 0, nonzero = 0, bright = 0, mean_pos = 0, mean_neg = 0;
  int n = 0, positives = 0, bad_range = 0;
  int margins[8] = {0};
};

// Per-image statistics averaged over images 0..n-1, computed on all cores.
Stats measure(const GeneratorConfig& cfg, int n, uint64_t seed) {
  const int threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::vector<Sample> samples(static_cast<size_t>(n));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += threads)
        samples[static_cast<size_t>(i)] = generate_image(cfg, seed, static_cast<uint64_t>(i));
    });
  for (auto& t : pool) t.join();
  Stats st;
  st.n = n;
  for (const Sample& s : samples) {
    const auto& px = s.image.pixels;
    double sum = 0, nz = 0, hi = 0;
    for (uint8_t p : px) sum += p, nz += p > 0, hi += p >= 128;
    const double m = sum / (255.0 * px.size());
    st.mean += m;
    st.nonzero += nz / px.size();
    st.bright += hi / px.size();
    const auto [lo, up] = std::minmax_element(px.begin(), px.end());
    st.bad_range += *lo != 0 || *up != 255;
    (s.label ? st.mean_pos : st.mean_neg) += m;
    st.positives += s.label;
    st.margins[s.margin & 7]++;
  }
  st.mean_pos /= std::max(1, st.positives);
  st.mean_neg /= std::max(1, n - st.positives);
  st.mean /= n, st.nonzero /= n, st.bright /= n;
  std::printf("  %dx%d, %d images: mean/255 %.4f, >0 %.4f, >=128 %.4f, positives %d, mean pos/neg %.4f/%.4f\n",
              cfg.window, cfg.window, n, st.mean, st.nonzero, st.bright, st.positives, st.mean_pos, st.mean_neg);
  return st;
}

void expect_near_rel(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, rel * want) << what << ": measured " << got << ", reference " << want;
}

}  // namespace

TEST(PathfinderStatistics, Pathfinder32MatchesTheReference) {
  const Stats st = measure(lra_config(32, 14), 2000, 2024);
  expect_near_rel(st.mean, 0.079, 0.10, "mean pixel / 255");
  expect_near_rel(st.nonzero, 0.34, 0.10, "fraction of pixels > 0");
  expect_near_rel(st.bright, 0.085, 0.15, "fraction of pixels >= 128");
  EXPECT_EQ(st.bad_range, 0) << "images whose minimum is not 0 or maximum not 255";
  EXPECT_GE(st.positives, 900);
  EXPECT_LE(st.positives, 1100);
  expect_near_rel(st.mean_pos, st.mean_neg, 0.05, "positive vs negative mean");
  EXPECT_EQ(st.margins[1], 2000);
}

TEST(PathfinderStatistics, PathX128MatchesTheReference) {
  const Stats st = measure(lra_config(128, 14), 240, 2024);
  expect_near_rel(st.mean, 0.031, 0.10, "mean pixel / 255");
  expect_near_rel(st.nonzero, 0.14, 0.10, "fraction of pixels > 0");
  expect_near_rel(st.bright, 0.031, 0.15, "fraction of pixels >= 128");
  EXPECT_EQ(st.bad_range, 0) << "images whose minimum is not 0 or maximum not 255";
  EXPECT_GE(st.positives, 96);  // 40-60% of 240
  EXPECT_LE(st.positives, 144);
  expect_near_rel(st.mean_pos, st.mean_neg, 0.08, "positive vs negative mean");
  EXPECT_GT(st.margins[2], 80);  // the margin is drawn per image from {2, 3}
  EXPECT_GT(st.margins[3], 80);
}
