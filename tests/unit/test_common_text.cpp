// common/text: join, trim, split_list and the escapes for people, XML and Markdown.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/text.h"

using namespace lra::host::text;

namespace {

TEST(Text, JoinsWithSeparator) {
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(join({"a"}), "a");
  EXPECT_EQ(join({"a", "", "b"}), "a, , b");
  EXPECT_EQ(join({"x", "y"}, ","), "x,y");
}

TEST(Text, TrimsBlanks) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Text, SplitsListsDroppingEmptyItems) {
  EXPECT_EQ(split_list("a,b,,c,"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_list(",,").empty());
  EXPECT_EQ(split_list("1024;2048", ';'), (std::vector<std::string>{"1024", "2048"}));
}

TEST(Text, EscapesXml) {
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(xml_escape("evil\u202E"), "evil&lt;U+202E&gt;");
}

TEST(Text, MarkdownCellWithEntities) {
  EXPECT_EQ(markdown_cell("a|b\n<c> & \"d\"\t*[e]`\\"), "a\\|b &lt;c&gt; &amp; \"d\" \\*\\[e\\]\\`\\\\");
  EXPECT_EQ(markdown_cell("linear_transformer"), "linear_transformer");
}

TEST(Text, MarkdownCellWithBackslashes) {
  EXPECT_EQ(markdown_cell("a|b\r\n<c> & \"d\"\t*", MarkdownEscape::backslashes), "a\\|b  \\<c\\> & \"d\"\t\\*");
  EXPECT_EQ(markdown_cell("\xff", MarkdownEscape::backslashes), "\xff");
}

}  // namespace

TEST(Text, SizesInDecimalUnits) {
  using lra::host::text::bytes_text;
  EXPECT_EQ(bytes_text(0), "0 B");
  EXPECT_EQ(bytes_text(999), "999 B");
  EXPECT_EQ(bytes_text(1000), "1.0 kB");
  EXPECT_EQ(bytes_text(33280), "33.3 kB");
  EXPECT_EQ(bytes_text(1048576), "1.05 MB");
  EXPECT_EQ(bytes_text(2'500'000'000), "2.50 GB");
}
