#include "forgetting/report_json.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "common/json_input.h"
#include "common/json_reader.h"
#include "forgetting/memory_length.h"
#include "forgetting/stats.h"
#include "lra/status.h"

namespace lra::host::forgetting {
namespace {

using nlohmann::json;

constexpr const char* kOwnHint =
    "lrahost forget writes this file (schema lrahost.forgetting/v1): fix the field or measure the curve again";
constexpr const char* kReferenceHint =
    "the reference tool's result file is a JSON list, one object per tested length in ascending order, each with an "
    "integer length and copy_mean, lm_mean in [0, 1] (optional copy_accs, lm_accs: equal-length lists of accuracies "
    "in [0, 1]); fix the file or write it again with the tool's draw.py";
constexpr const char* kEitherHint =
    "--compare reads lrahost's forgetting.json (a JSON object) or the reference tool's result file (a JSON list of "
    "per-length objects): fix the file or pass another";

// Every message is "<source>: <field>: <what>; <hint>" (common/json_reader.h);
// Python's NaN and Infinity, quoted by quote_non_finite, are named as such.
JsonReader reader(const std::string& source, const char* hint) {
  return JsonReader(source, lra::ErrorKind::data, hint, NonFiniteWords::quoted);
}

double accuracy(const JsonReader& r, const json& v, const std::string& field) {
  const double x = r.number(v, field);
  if (!(x >= 0 && x <= 1)) r.fail(field, r.shown(v) + " is not in [0, 1]");
  return x;
}

std::vector<double> accuracies(const JsonReader& r, const json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) r.fail(field, "expected a non-empty array of accuracies, got " + r.shown(v));
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(accuracy(r, v[i], field + "[" + std::to_string(i) + "]"));
  return out;
}

// The point's length: a positive integer exceeding the previous point's.
int64_t read_length(const JsonReader& r, const json& v, const std::string& field, const Curve& curve) {
  const int64_t length = r.integer(r.require(v, "length", field + ".length"), field + ".length");
  if (length <= 0) r.fail(field + ".length", std::to_string(length) + " is not positive");
  if (!curve.points.empty() && length <= curve.points.back().length) {
    r.fail(field + ".length", std::to_string(length) + " does not exceed the previous length " +
                                  std::to_string(curve.points.back().length) + " (lengths must ascend)");
  }
  return length;
}

void check_same_size(const JsonReader& r, const CurvePoint& p, const std::string& field) {
  if (p.lm_accs.size() != p.copy_accs.size()) {
    r.fail(field + ".lm_accs", std::to_string(p.lm_accs.size()) + " values, but copy_accs has " +
                                   std::to_string(p.copy_accs.size()));
  }
}

CurvePoint point_from_json(const JsonReader& r, const json& v, const std::string& field, const Curve& curve) {
  r.expect_object(v, field);
  CurvePoint p;
  p.length = read_length(r, v, field, curve);
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
  p.copy_accs = accuracies(r, r.require(v, "copy_accs", field + ".copy_accs"), field + ".copy_accs");
  p.lm_accs = accuracies(r, r.require(v, "lm_accs", field + ".lm_accs"), field + ".lm_accs");
  check_same_size(r, p, field);
  return p;
}

// One element of the reference tool's list (curve_from_reference_json).
CurvePoint reference_point(const JsonReader& r, const json& v, const std::string& field, const Curve& curve) {
  r.expect_object(v, field);
  CurvePoint p;
  p.length = read_length(r, v, field, curve);
  p.copy_mean = accuracy(r, r.require(v, "copy_mean", field + ".copy_mean"), field + ".copy_mean");
  p.lm_mean = accuracy(r, r.require(v, "lm_mean", field + ".lm_mean"), field + ".lm_mean");
  if (const auto it = v.find("copy_std"); it != v.end()) p.copy_std = r.non_negative(*it, field + ".copy_std");
  if (const auto it = v.find("lm_std"); it != v.end()) p.lm_std = r.non_negative(*it, field + ".lm_std");
  if (const auto it = v.find("p_value"); it != v.end()) {
    p.p_value = accuracy(r, *it, field + ".p_value");  // a probability: the same [0, 1] check
  }
  if (const auto it = v.find("normality"); it != v.end()) {  // reported by the tool, used by nobody
    r.expect_object(*it, field + ".normality");
    for (const char* key : {"normality", "variance_homogeneity"}) {
      const auto b = it->find(key);
      if (b != it->end() && !b->is_boolean()) {
        r.fail(field + ".normality." + key, "expected true or false, got " + r.shown(*b));
      }
    }
  }
  const bool has_copy = v.contains("copy_accs"), has_lm = v.contains("lm_accs");
  if (has_copy != has_lm) {
    r.fail(field + (has_copy ? ".lm_accs" : ".copy_accs"),
           std::string("missing, though ") + (has_copy ? "copy_accs" : "lm_accs") + " is present (give both or neither)");
  }
  if (has_copy) {
    p.copy_accs = accuracies(r, v["copy_accs"], field + ".copy_accs");
    p.lm_accs = accuracies(r, v["lm_accs"], field + ".lm_accs");
    check_same_size(r, p, field);
    // The statistics are recomputed from the lists; stored means that do not
    // match them mean the file was edited or mixed up.
    auto check_mean = [&](const char* name, double stored, const std::vector<double>& accs, const char* list) {
      const double m = mean(accs);
      if (std::abs(m - stored) <= 1e-6) return;
      std::ostringstream what;
      what.precision(9);
      what << stored << " differs from the mean of " << list << ", " << m;
      r.fail(field + "." + name, what.str());
    };
    check_mean("copy_mean", p.copy_mean, p.copy_accs, "copy_accs");
    check_mean("lm_mean", p.lm_mean, p.lm_accs, "lm_accs");
  }
  return p;
}


// A stored memory length: {value, censored} when `key` is a non-negative
// integer (and `key`_censored, when present, a boolean); nullopt when absent;
// an explanation in `bad` when mistyped.
std::optional<MemoryLength> stored_length(const JsonReader& r, const json& doc, const std::string& key,
                                          std::string& bad) {
  const auto it = doc.find(key);
  if (it == doc.end()) return std::nullopt;
  const auto flag = doc.find(key + "_censored");
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || (flag != doc.end() && !flag->is_boolean())) {
    bad = key + " " + r.shown(*it) + " is not a length";
    return std::nullopt;
  }
  return MemoryLength{it->get<int64_t>(), flag != doc.end() && flag->get<bool>()};
}

bool same(const MemoryLength& a, const MemoryLength& b) { return a.value == b.value && a.censored == b.censored; }

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
          {"fine_length_prefix", curve.fine_prefix.value},
          {"fine_length_prefix_censored", curve.fine_prefix.censored},
          {"coarse_length_prefix", curve.coarse_prefix.value},
          {"coarse_length_prefix_censored", curve.coarse_prefix.censored},
          {"complete", curve.complete},
          {"points", points_to_json(curve)}};
}

Curve curve_from_json(const json& doc, const std::string& source) {
  const JsonReader r = reader(source, kOwnHint);
  if (!doc.is_object()) r.fail("", "expected a JSON object, got " + r.shown(doc));
  const json& schema = r.require(doc, "schema", "schema");
  if (!schema.is_string() || schema.get<std::string>() != kForgettingSchema) {
    r.fail("schema", "expected \"" + std::string(kForgettingSchema) + "\", got " + r.shown(schema));
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
  if (!points.is_array()) r.fail("points", "expected an array, got " + r.shown(points));
  for (std::size_t i = 0; i < points.size(); ++i) {
    curve.points.push_back(point_from_json(r, points[i], "points[" + std::to_string(i) + "]", curve));
  }
  finalize(curve);
  return curve;
}

Curve curve_from_reference_json(const json& doc, const std::string& source, const std::string& label) {
  const JsonReader r = reader(source, kReferenceHint);
  if (!doc.is_array()) r.fail("", "expected a JSON list, got " + r.shown(doc));
  if (doc.empty()) r.fail("", "the list is empty: no tested lengths");
  Curve curve;
  curve.label = label;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    curve.points.push_back(reference_point(r, doc[i], "[" + std::to_string(i) + "]", curve));
  }
  finalize(curve);
  return curve;
}

std::vector<std::string> stored_length_notes(const json& doc, const Curve& curve, const std::string& source) {
  struct Field {
    const char* key;
    const MemoryLength& recomputed;
  };
  const Field fields[] = {{"fine_length", curve.fine},
                          {"coarse_length", curve.coarse},
                          {"fine_length_prefix", curve.fine_prefix},
                          {"coarse_length_prefix", curve.coarse_prefix}};
  const JsonReader r = reader(source, kOwnHint);
  std::string differences;
  bool headline_differs = false;
  for (const Field& f : fields) {
    std::string bad;
    const auto stored = stored_length(r, doc, f.key, bad);
    std::string item;
    if (!bad.empty()) {
      item = bad + ", recomputed " + length_text(f.recomputed);
    } else if (stored && !same(*stored, f.recomputed)) {
      item = std::string(f.key) + " " + length_text(*stored) + ", recomputed " + length_text(f.recomputed);
    } else {
      continue;
    }
    headline_differs = headline_differs || std::string(f.key).find("prefix") == std::string::npos;
    differences += (differences.empty() ? "" : "; ") + item;
  }
  if (differences.empty()) return {};
  std::string note = source + ": the stored memory lengths differ from those its points give: " + differences;
  // Written before the Table 3 rule: fine_length/coarse_length are the prefix rule's values.
  std::string unused;
  const auto fine = stored_length(r, doc, "fine_length", unused), coarse = stored_length(r, doc, "coarse_length", unused);
  if (headline_differs && !doc.contains("fine_length_prefix") && fine && coarse &&
      same(*fine, curve.fine_prefix) && same(*coarse, curve.coarse_prefix)) {
    note += " (the stored values are the prefix rule's: the file was written before lrahost adopted Table 3's rule)";
  }
  return {note + "; the recomputed values are the ones shown"};
}

LoadedCurve load_curve_file(const std::filesystem::path& file) {
  const std::string source = file.string();
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw lra::Error(lra::ErrorKind::data,
                     "cannot read '" + source + "': " + std::strerror(errno) + "; check the path (" + kEitherHint + ")");
  }
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = lra::host::parse_json_input(quote_non_finite(text.str()));
  } catch (const lra::host::JsonInputError& e) {
    throw lra::Error(lra::ErrorKind::data, source + ": not valid JSON: " + e.what() + "; " + kEitherHint);
  }
  LoadedCurve loaded;
  if (doc.is_array()) {
    loaded.format = "reference tool";
    loaded.curve = curve_from_reference_json(doc, source, file.stem().string());
  } else if (doc.is_object()) {
    loaded.format = "forgetting.json";
    loaded.curve = curve_from_json(doc, source);
    loaded.notes = stored_length_notes(doc, loaded.curve, source);
  } else {
    const JsonReader r = reader(source, kEitherHint);
    r.fail("", "expected a JSON list or object, got " + r.shown(doc));
  }
  return loaded;
}

}  // namespace lra::host::forgetting
