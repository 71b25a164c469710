// common/json_input: the depth-limited JSON parse every user-supplied JSON goes through (issue 18).
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/json_input.h"

using namespace lra::host;

namespace {

std::string nested(int depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonInput, ParsesOrdinaryDocuments) {
  const auto j = parse_json_input(std::string_view(R"({"a": [1, {"b": "x[{"}], "c": null})"));
  EXPECT_EQ(j.at("a").at(1).at("b"), "x[{");
  std::istringstream in(R"([1, 2, 3])");
  EXPECT_EQ(parse_json_input(in).size(), 3u);
}

TEST(JsonInput, AcceptsExactlyTheLimit) {
  EXPECT_NO_THROW(parse_json_input(std::string_view(nested(kMaxJsonDepth))));
  EXPECT_EQ(json_depth_violation(nested(kMaxJsonDepth)), std::string_view::npos);
  EXPECT_EQ(json_depth_violation(nested(kMaxJsonDepth + 1)), static_cast<std::size_t>(kMaxJsonDepth));
}

TEST(JsonInput, RefusesDeepNestingWithoutRecursing) {
  // The issue's file: 100,000 levels in 200 KB (a recursive parse or dump would overflow the stack).
  const std::string deep = nested(100000);
  try {
    parse_json_input(std::string_view(deep));
    FAIL() << "accepted a document nested 100,000 deep";
  } catch (const JsonInputError& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 64 levels deep (at byte 64)"), std::string::npos) << e.what();
  }
  // Objects count as well as arrays, and a never-closed document is refused the same way.
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"k\":";
  EXPECT_THROW(parse_json_input(std::string_view(objects)), JsonInputError);
}

TEST(JsonInput, BracketsInsideStringsDoNotCount) {
  const std::string text = "{\"s\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_EQ(parse_json_input(std::string_view(text)).at("s").get<std::string>().size(), 2001u);
}

TEST(JsonInput, MalformedIsAJsonInputError) {
  EXPECT_THROW(parse_json_input(std::string_view("{\"a\": ")), JsonInputError);
  EXPECT_THROW(parse_json_input(std::string_view("")), JsonInputError);
  EXPECT_THROW(parse_json_input(std::string_view("]]]]")), JsonInputError);
}

}  // namespace
