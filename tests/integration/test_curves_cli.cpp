// Learning curves and `sign` end to end: every run writes history.csv and curves.svg
// beside result.json; `lrahost curves` overlays runs; bad input is refused
// with the documented exit code and nothing written.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// The SVG drawn by headless Chromium: every text's box inside the picture and
// no two texts overlapping (legend labels, ticks, titles). Returns the
// driver's JSON, or null where Chromium is not installed.
json rendered_text_boxes(const fs::path& svg, const fs::path& work) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) return nullptr;
  static const char* kDriver = R"JS(<pre id="lrahost-test"></pre>
<script>
(function () {
  const svg = document.querySelector('svg');
  const frame = svg.getBoundingClientRect();
  const clean = s => s.replace(/[&<>]/g, '_').slice(0, 80);
  const boxes = Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim().length).map(t => {
    const r = t.getBoundingClientRect();
    return {text: clean(t.textContent), l: r.left, t: r.top, r: r.right, b: r.bottom};
  });
  const outside = boxes.filter(b => b.l < frame.left - 0.5 || b.t < frame.top - 0.5 || b.r > frame.right + 0.5 ||
                                    b.b > frame.bottom + 0.5).map(b => b.text);
  const overlaps = [];
  for (let i = 0; i < boxes.length; ++i)
    for (let j = i + 1; j < boxes.length; ++j) {
      const a = boxes[i], c = boxes[j];
      const w = Math.min(a.r, c.r) - Math.max(a.l, c.l), h = Math.min(a.b, c.b) - Math.max(a.t, c.t);
      if (w > 1 && h > 1) overlaps.push(a.text + ' / ' + c.text);
    }
  document.getElementById('lrahost-test').textContent =
      JSON.stringify({texts: boxes.length, width: frame.width, outside, overlaps});
})();
</script>
)JS";
  const fs::path page = work / (svg.parent_path().filename().string() + "-driven.html");
  write_text(page, "<!doctype html><html><body style=\"margin:0\">" + read_text(svg) + kDriver + "</body></html>");
  const std::string dom = run_capture("HOME=" + work.string() + " timeout 120 " + chromium +
                                      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
                                      " --user-data-dir=" + (work / "profile").string() + " --dump-dom file://" +
                                      page.string() + " 2>/dev/null");
  const std::string open_tag = "<pre id=\"lrahost-test\">";
  const auto at = dom.find(open_tag);
  if (at == std::string::npos) return json{{"error", dom.substr(0, 2000)}};
  return json::parse(dom.substr(at + open_tag.size(), dom.find("</pre>", at) - at - open_tag.size()));
}

TEST(CurvesCli, RunsWriteTheirCurvesAndCurvesOverlaysThem) {
  TempDir d;
  const std::string data = d.str() + "/data";
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "a").string())).code, 0);
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "b").string()) + " --seed 1").code, 0);
  const json r = json::parse(read_text(d.path() / "a" / "result.json"));
  const std::string csv = read_text(d.path() / "a" / "history.csv");
  EXPECT_EQ(csv.rfind("step,lr,train_loss,train_accuracy,val_loss,val_accuracy,steps_per_second\n", 0), 0u);
  EXPECT_EQ(lines(csv), r["history"].size() + 1);
  std::istringstream rows(csv);
  std::string header, first;
  std::getline(rows, header);
  std::getline(rows, first);
  EXPECT_EQ(first.rfind(std::to_string(r["history"][0]["step"].get<int64_t>()) + ",", 0), 0u) << first;
  EXPECT_NE(first.back(), ',') << "this process measured the speed: " << first;
  EXPECT_NE(read_text(d.path() / "a" / "curves.svg").find("transformer on listops, seed 0"), std::string::npos);

  const fs::path out = d.path() / "overlay";
  auto o = lrahost("curves " + (d.path() / "a").string() + " " + (d.path() / "b" / "result.json").string() +
                   " --out " + out.string() +
                   " --title 'two seeds of transformer on the smoke ListOps preset, learning curves overlaid'");
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string svg = read_text(out / "curves.svg");
  EXPECT_NE(svg.find("seed 0"), std::string::npos);
  EXPECT_NE(svg.find("seed 1"), std::string::npos);
  EXPECT_NE(svg.find("two seeds"), std::string::npos);
  const json b = json::parse(read_text(d.path() / "b" / "result.json"));
  EXPECT_EQ(lines(read_text(out / "curves.csv")), 1 + r["history"].size() + b["history"].size());

  // Drawn in a browser: nothing outside the picture, nothing on top of anything else.
  for (const fs::path& drawn : {d.path() / "a" / "curves.svg", out / "curves.svg"}) {
    SCOPED_TRACE(drawn.string());
    const json boxes = rendered_text_boxes(drawn, d.path());
    if (boxes.is_null()) {
      std::cout << "chromium is not on PATH (scripts/bootstrap installs it): the SVGs were not drawn\n";
      break;
    }
    ASSERT_FALSE(boxes.contains("error")) << boxes["error"];
    EXPECT_GT(boxes["texts"].get<int>(), 10) << boxes.dump();
    EXPECT_EQ(boxes["outside"], json::array()) << boxes.dump();
    EXPECT_EQ(boxes["overlaps"], json::array()) << boxes.dump();
  }
}

TEST(CurvesCli, BadInputWritesNothing) {
  TempDir d;
  auto missing = lrahost("curves " + (d.path() / "nope").string() + " --out " + (d.path() / "o1").string());
  EXPECT_EQ(missing.code, 2) << missing.output;
  fs::create_directories(d.path() / "bad");
  write_text(d.path() / "bad" / "result.json", R"({"plugin": {"name": "x"}, "history": [{"step": "one"}]})");
  auto bad = lrahost("curves " + (d.path() / "bad").string() + " --out " + (d.path() / "o2").string());
  EXPECT_EQ(bad.code, 5) << bad.output;
  EXPECT_NE(bad.output.find("history[0].step"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(d.path() / "o1"));
  EXPECT_FALSE(fs::exists(d.path() / "o2"));
}

}  // namespace
}  // namespace lra::test

namespace lra::test {
namespace {

// `lrahost sign`: an unsigned run is signed after the fact and then passes
// verify --trusted-keys; a signed, an invalid or a wrongly named file is
// refused and nothing is written.
TEST(SignCli, SignsFinishedResultsOnlyWhenAllAreValidAndUnsigned) {
  TempDir d;
  const std::string data = d.str() + "/data";
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "a").string())).code, 0);
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "b").string()) + " --seed 1").code, 0);
  ASSERT_EQ(lrahost("keygen --out " + (d.path() / "key").string()).code, 0);
  const std::string key = (d.path() / "key" / "lrahost-key.pem").string();
  auto trusted = lrahost("verify " + (d.path() / "a").string() + " --trusted-keys " + (d.path() / "key").string());
  EXPECT_NE(trusted.code, 0) << "unsigned: " << trusted.output;

  // One bad file among good ones: nothing is signed.
  const std::string b_before = read_text(d.path() / "b" / "result.json");
  fs::create_directories(d.path() / "bad");
  json bad = json::parse(b_before);
  bad["metrics"]["test_accuracy"] = 0.99;  // digest no longer matches
  write_text(d.path() / "bad" / "result.json", bad.dump());
  auto refused = lrahost("sign " + (d.path() / "b").string() + " " + (d.path() / "bad").string() + " --key " + key);
  EXPECT_EQ(refused.code, 4) << refused.output;
  EXPECT_EQ(read_text(d.path() / "b" / "result.json"), b_before) << "nothing signed when one file is refused";

  auto ok = lrahost("sign " + (d.path() / "a").string() + " " + (d.path() / "b" / "result.json").string() + " --key " + key);
  ASSERT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("signed by"), std::string::npos);
  auto now = lrahost("verify " + (d.path() / "a").string() + " " + (d.path() / "b").string() + " --trusted-keys " +
                     (d.path() / "key").string());
  EXPECT_EQ(now.code, 0) << now.output;
  EXPECT_EQ(json::parse(read_text(d.path() / "b" / "result.json"))["digest"], json::parse(b_before)["digest"])
      << "signing never changes the digest";

  auto again = lrahost("sign " + (d.path() / "a").string() + " --key " + key);
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("already signed by key"), std::string::npos) << again.output;
  auto no_key = lrahost("sign " + (d.path() / "a").string() + " --key " + (d.path() / "nokey.pem").string());
  EXPECT_EQ(no_key.code, 2) << no_key.output;
}

}  // namespace
}  // namespace lra::test
