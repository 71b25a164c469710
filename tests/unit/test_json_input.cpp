// common/json_input: the depth-limited JSON parse every user-supplied JSON goes through (issue 18);
// common/json_reader: checking what it gave field by field.
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/json_input.h"
#include "common/json_reader.h"

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

// common/json_reader: the field-by-field checks of bench.json and forgetting.json.

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const lra::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonReader, NamesSourceFieldAndHint) {
  const JsonReader plain("b.json", lra::ErrorKind::usage);
  EXPECT_EQ(message_of([&] { plain.require(nlohmann::json::object(), "x", "results[0].x"); }),
            "b.json: results[0].x: missing");
  EXPECT_EQ(message_of([&] { plain.fail("", "expected a JSON object, got 3"); }), "b.json: expected a JSON object, got 3");
  const JsonReader hinted("f.json", lra::ErrorKind::data, "fix it");
  EXPECT_EQ(message_of([&] { hinted.integer(nlohmann::json(1.5), "n"); }), "f.json: n: expected an integer, got 1.5; fix it");
  EXPECT_EQ(message_of([&] { hinted.non_negative(nlohmann::json(-2), "m"); }), "f.json: m: -2 is negative; fix it");
}

TEST(JsonReader, FiniteNumbersOnRequest) {
  const JsonReader r("b.json", lra::ErrorKind::usage);
  const nlohmann::json nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NO_THROW(r.number(nan, "x"));
  EXPECT_EQ(message_of([&] { r.number(nan, "x", true); }), "b.json: x: expected a number, got null");
}

TEST(JsonReader, PythonNonFiniteWords) {
  const std::string text = quote_non_finite(R"({"a": NaN, "b": [-Infinity], "c": "NaN"})");
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["c"], "NaN");
  const JsonReader quoted("f.json", lra::ErrorKind::data, "", NonFiniteWords::quoted);
  EXPECT_EQ(message_of([&] { quoted.number(doc["a"], "a"); }),
            "f.json: a: expected a number, got NaN (Python's json writes it; JSON has none)");
  EXPECT_EQ(message_of([&] { quoted.string(doc["b"][0], "b[0]"); }), "f.json: b[0]: expected a string, got -Infinity");
  const JsonReader plain("f.json", lra::ErrorKind::data);
  EXPECT_EQ(plain.string(doc["a"], "a"), "\x01NaN");
}

}  // namespace
