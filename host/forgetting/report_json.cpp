#include "forgetting/report_json.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "forgetting/memory_length.h"
#include "lra/status.h"

namespace lra::host::forgetting {
namespace {

using nlohmann::json;

// Validation of one document; every message is "<source>: <field>: <what>".
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw lra::Error(lra::ErrorKind::usage, source_ + ": " + field + ": " + what);
  }

  const json& require(const json& object, const char* key, const std::string& field) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(field, "missing");
    return *it;
  }

  void expect_object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "expected an object, got " + shown(v));
  }

  double number(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "expected a number, got " + shown(v));
    return v.get<double>();
  }

  int64_t integer(const json& v, const std::string& field) const {
    const bool fits = v.is_number_integer() &&
                      (!v.is_number_unsigned() ||
                       v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
    if (!fits) fail(field, "expected an integer, got " + shown(v));
    return v.get<int64_t>();
  }

  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string, got " + shown(v));
    return v.get<std::string>();
  }

  std::vector<double> accuracies(const json& v, const std::string& field) const {
    if (!v.is_array() || v.empty()) fail(field, "expected a non-empty array of accuracies, got " + shown(v));
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item = field + "[" + std::to_string(i) + "]";
      const double x = number(v[i], item);
      if (!(x >= 0 && x <= 1)) fail(item, shown(v[i]) + " is not in [0, 1]");
      out.push_back(x);
    }
    return out;
  }

  // The value as JSON text, shortened so a wrong array does not flood the message.
  static std::string shown(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    constexpr std::size_t kMax = 60;
    if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
    return s;
  }

 private:
  const std::string& source_;
};

CurvePoint point_from_json(const Reader& r, const json& v, const std::string& field) {
  r.expect_object(v, field);
  CurvePoint p;
  p.length = r.integer(r.require(v, "length", field + ".length"), field + ".length");
  if (p.length <= 0) r.fail(field + ".length", std::to_string(p.length) + " is not positive");
  if (const auto it = v.find("error"); it != v.end()) {
    p.error = r.string(*it, field + ".error");
    if (p.error.empty()) r.fail(field + ".error", "empty (a failed point needs a reason)");
    return p;
  }
  // Read even though finalize recomputes them: a point without them is not one we wrote.
  p.copy_mean = r.number(r.require(v, "copy_mean", field + ".copy_mean"), field + ".copy_mean");
  p.copy_std = r.number(r.require(v, "copy_std", field + ".copy_std"), field + ".copy_std");
  p.lm_mean = r.number(r.require(v, "lm_mean", field + ".lm_mean"), field + ".lm_mean");
  p.lm_std = r.number(r.require(v, "lm_std", field + ".lm_std"), field + ".lm_std");
  p.p_value = r.number(r.require(v, "p_value", field + ".p_value"), field + ".p_value");
  p.copy_accs = r.accuracies(r.require(v, "copy_accs", field + ".copy_accs"), field + ".copy_accs");
  p.lm_accs = r.accuracies(r.require(v, "lm_accs", field + ".lm_accs"), field + ".lm_accs");
  if (p.lm_accs.size() != p.copy_accs.size()) {
    r.fail(field + ".lm_accs", std::to_string(p.lm_accs.size()) + " values, but copy_accs has " +
                                   std::to_string(p.copy_accs.size()));
  }
  return p;
}

}  // namespace

json points_to_json(const Curve& curve) {
  json out = json::array();
  for (const CurvePoint& p : curve.points) {
    if (!p.ok()) {
      out.push_back({{"length", p.length}, {"error", p.error}});
      continue;
    }
    out.push_back({{"length", p.length},
                   {"copy_mean", p.copy_mean},
                   {"copy_std", p.copy_std},
                   {"lm_mean", p.lm_mean},
                   {"lm_std", p.lm_std},
                   {"copy_accs", p.copy_accs},
                   {"lm_accs", p.lm_accs},
                   {"p_value", p.p_value}});
  }
  return out;
}

json curve_summary_json(const Curve& curve) {
  return {{"fine_length", curve.fine.value},
          {"fine_length_censored", curve.fine.censored},
          {"coarse_length", curve.coarse.value},
          {"coarse_length_censored", curve.coarse.censored},
          {"complete", curve.complete},
          {"points", points_to_json(curve)}};
}

Curve curve_from_json(const json& doc, const std::string& source) {
  const Reader r(source);
  if (!doc.is_object()) {
    throw lra::Error(lra::ErrorKind::usage,
                     source + ": expected a JSON object, got " + Reader::shown(doc));
  }
  const json& schema = r.require(doc, "schema", "schema");
  if (!schema.is_string() || schema.get<std::string>() != kForgettingSchema) {
    r.fail("schema", "expected \"" + std::string(kForgettingSchema) + "\", got " + Reader::shown(schema));
  }
  Curve curve;
  curve.label = r.string(r.require(doc, "label", "label"), "label");
  if (const auto config = doc.find("configuration"); config != doc.end()) {
    r.expect_object(*config, "configuration");
    if (const auto it = config->find("train_length"); it != config->end()) {
      curve.train_length = r.integer(*it, "configuration.train_length");
      if (curve.train_length < 0) {
        r.fail("configuration.train_length", std::to_string(curve.train_length) + " is negative");
      }
    }
  }
  const json& points = r.require(doc, "points", "points");
  if (!points.is_array()) r.fail("points", "expected an array, got " + Reader::shown(points));
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string field = "points[" + std::to_string(i) + "]";
    CurvePoint p = point_from_json(r, points[i], field);
    if (!curve.points.empty() && p.length <= curve.points.back().length) {
      r.fail(field + ".length", std::to_string(p.length) + " does not exceed the previous length " +
                                    std::to_string(curve.points.back().length));
    }
    curve.points.push_back(std::move(p));
  }
  finalize(curve);
  return curve;
}

Curve load_curve_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw lra::Error(lra::ErrorKind::usage,
                     "cannot read '" + file.string() + "': " + std::strerror(errno));
  }
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw lra::Error(lra::ErrorKind::usage, file.string() + ": not valid JSON: " + e.what());
  }
  return curve_from_json(doc, file.string());
}

}  // namespace lra::host::forgetting
