// plot/chart: palette, text width, scales and ticks, and the legend column.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plot/chart.h"

using namespace lra::host::svg;

namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks) out.push_back(t.label);
  return out;
}

TEST(Chart, PaletteRepeats) {
  EXPECT_EQ(palette_colour(0), "#1f77b4");
  EXPECT_EQ(palette_colour(10), "#aec7e8");
  EXPECT_EQ(palette_colour(20), "#1f77b4");
  EXPECT_EQ(palette_colour(10, 10), "#1f77b4");
  EXPECT_EQ(palette_colour(13, 10), "#d62728");
}

TEST(Chart, CountsCharactersNotBytes) {
  EXPECT_EQ(characters("é中a"), 3u);
  EXPECT_DOUBLE_EQ(text_width("abc"), 19.5);
  EXPECT_DOUBLE_EQ(text_width("ab", 10), 20);
}

TEST(Chart, LogTicks) {
  EXPECT_EQ(labels(log_ticks(0, 1)), (std::vector<std::string>{"1", "2", "5", "10"}));
  EXPECT_EQ(labels(log_ticks(-1, 5)), (std::vector<std::string>{"0.1", "1", "10", "100", "1000", "10000", "100000"}));
  EXPECT_EQ(labels(log2_ticks(1, 3)), (std::vector<std::string>{"16", "32", "64", "128", "256", "512"}));
  EXPECT_EQ(labels(log2_ticks(0, 0.5)).size(), linear_ticks(1, 3.1622776601683795).size());
}

TEST(Chart, Scales) {
  const Scale linear = value_scale({1, 2, 4}, 0.5);
  EXPECT_FALSE(linear.log);
  EXPECT_DOUBLE_EQ(linear.hi, 6);
  EXPECT_DOUBLE_EQ(linear.fraction(3), 0.5);
  EXPECT_DOUBLE_EQ(linear.fraction(-1), 0);
  const Scale log = value_scale({1, 1000}, 0);
  EXPECT_TRUE(log.log);
  EXPECT_DOUBLE_EQ(log.fraction(10), 1.0 / 3);
  EXPECT_DOUBLE_EQ(log.fraction(0), 0);
  const Scale single = padded_scale({5}, 0.1, 2);
  EXPECT_DOUBLE_EQ(single.lo, 3);
  EXPECT_DOUBLE_EQ(single.hi, 7);
  const Panel p{{10, 20, 110, 220}, {false, 0, 10}, {false, 0, 1}};
  EXPECT_DOUBLE_EQ(p.px(5), 60);
  EXPECT_DOUBLE_EQ(p.py(1), 20);
}

TEST(Chart, LegendRows) {
  std::string s;
  Legend legend(s, 100, 50);
  legend.line("#111111", "plain", "6,3");
  legend.line("#222222", Legend::cut("a rather long label", 8));
  legend.note("note", Legend::kTextIndent);
  legend.gap();
  legend.note("edge");
  EXPECT_EQ(s,
            "<line x1=\"100\" y1=\"50\" x2=\"124\" y2=\"50\" stroke=\"#111111\" stroke-width=\"2\" "
            "stroke-dasharray=\"6,3\"/>\n"
            "<text x=\"132\" y=\"54\">plain</text>\n"
            "<line x1=\"100\" y1=\"68\" x2=\"124\" y2=\"68\" stroke=\"#222222\" stroke-width=\"2\"/>\n"
            "<text x=\"132\" y=\"72\"><title>a rather long label</title>a rathe…</text>\n"
            "<text x=\"132\" y=\"90\" fill=\"#555555\" font-size=\"11\">note</text>\n"
            "<text x=\"100\" y=\"117\" fill=\"#555555\" font-size=\"11\">edge</text>\n");
}

TEST(Chart, Marks) {
  EXPECT_EQ(circle(1, 2, 3, "#000", " class=\"c\"", "a<b"),
            "<circle cx=\"1\" cy=\"2\" r=\"3\" fill=\"#000\" class=\"c\"><title>a&lt;b</title></circle>\n");
  EXPECT_EQ(failure_mark(10, 10, 1, "red", "oom"),
            "<g class=\"failed\"><title>oom</title><path d=\"M9 9 L11 11 M9 11 L11 9\" stroke=\"red\" "
            "stroke-width=\"2\" fill=\"none\"/></g>\n");
}

}  // namespace
