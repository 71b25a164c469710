#include "bench/report_json.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "common/json_reader.h"
#include "lra/status.h"

namespace lra::host::bench {
namespace {

using nlohmann::json;

bool ok(const BenchPoint& p) { return p.status == "ok"; }

// bench.json's checks (common/json_reader.h); every message is
// "<source>: <field>: <what>", the field being "<at>.<key>".
std::string field(const std::string& at, const char* key) { return at + "." + key; }

std::string string_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  return r.string(r.require(object, key, field(at, key)), field(at, key));
}

// A non-negative integer.
int64_t count_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const auto n = r.integer(r.require(object, key, field(at, key)), field(at, key));
  if (n < 0) r.fail(field(at, key), std::to_string(n) + " is negative");
  return n;
}

// A finite, non-negative number.
double number_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  return r.non_negative(r.require(object, key, field(at, key)), field(at, key), true);
}

// Present, and null when unknown.
std::optional<double> nullable_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const json& v = r.require(object, key, field(at, key));
  if (v.is_null()) return std::nullopt;
  return r.non_negative(v, field(at, key), true);
}

std::vector<double> numbers_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const json& v = r.require(object, key, field(at, key));
  if (!v.is_array()) r.fail(field(at, key), "expected an array, got " + r.shown(v));
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(r.non_negative(v[i], field(at, key) + "[" + std::to_string(i) + "]", true));
  }
  return out;
}

BenchPoint point_from_json(const JsonReader& r, const json& v, const std::string& at) {
  if (!v.is_object()) r.fail(at, "expected an object, got " + r.shown(v));
  BenchPoint p;
  p.plugin = string_at(r, v, at, "plugin");
  if (p.plugin.empty()) r.fail(at + ".plugin", "empty");
  p.length = count_at(r, v, at, "length");
  if (p.length == 0) r.fail(at + ".length", "0 is not positive");
  p.batch = count_at(r, v, at, "batch");
  if (p.batch == 0) r.fail(at + ".batch", "0 is not positive");
  p.device = string_at(r, v, at, "device");
  p.dtype = string_at(r, v, at, "dtype");
  p.status = string_at(r, v, at, "status");
  if (p.status != "ok" && p.status != "oom" && p.status != "error") {
    r.fail(at + ".status", "expected \"ok\", \"oom\" or \"error\", got " + r.shown(json(p.status)));
  }
  if (ok(p)) {
    if (v.contains("error")) r.fail(at + ".error", "present, but status is \"ok\"");
  } else {
    p.error = string_at(r, v, at, "error");
    if (p.error.empty()) r.fail(at + ".error", "empty (a failed point needs a reason)");
  }
  p.steps_per_s = number_at(r, v, at, "steps_per_s");
  // Speed-ups divide by it.
  if (ok(p) && p.steps_per_s == 0) r.fail(at + ".steps_per_s", "0 is not positive for an ok point");
  p.repetition_steps_per_s = numbers_at(r, v, at, "repetition_steps_per_s");
  p.tokens_per_s = number_at(r, v, at, "tokens_per_s");
  p.peak_memory_bytes = count_at(r, v, at, "peak_memory_bytes");
  p.peak_memory_kind = string_at(r, v, at, "peak_memory_kind");
  p.params = count_at(r, v, at, "params");
  p.flops_per_step = nullable_at(r, v, at, "flops_per_step");
  p.mfu = nullable_at(r, v, at, "mfu");
  // Optional (written since the spread warnings): the machine's load then.
  if (v.contains("load_average")) {
    p.load_average = number_at(r, v, at, "load_average");
    p.cores = count_at(r, v, at, "cores");
  }
  if (v.contains("cuda_graphs")) p.cuda_graphs = string_at(r, v, at, "cuda_graphs");  // optional, CUDA only
  return p;
}

}  // namespace

json bench_points_json(const std::vector<BenchPoint>& points) {
  json out = json::array();
  for (const BenchPoint& p : points) {
    json o = {{"plugin", p.plugin},
              {"length", p.length},
              {"batch", p.batch},
              {"device", p.device},
              {"dtype", p.dtype},
              {"status", p.status},
              {"steps_per_s", p.steps_per_s},
              {"repetition_steps_per_s", p.repetition_steps_per_s},
              {"tokens_per_s", p.tokens_per_s},
              {"peak_memory_bytes", p.peak_memory_bytes},
              {"peak_memory_kind", p.peak_memory_kind},
              {"params", p.params},
              {"flops_per_step", p.flops_per_step ? json(*p.flops_per_step) : json(nullptr)},
              {"mfu", p.mfu ? json(*p.mfu) : json(nullptr)}};
    if (!ok(p)) o["error"] = p.error;
    if (ok(p) && p.repetition_steps_per_s.size() > 1) {
      const Spread r = spread_of(p);
      o["spread"] = {{"min_steps_per_s", r.min}, {"max_steps_per_s", r.max}, {"fraction", r.fraction}};
    }
    if (p.load_average >= 0) {
      o["load_average"] = p.load_average;
      o["cores"] = p.cores;
    }
    if (!p.cuda_graphs.empty()) o["cuda_graphs"] = p.cuda_graphs;
    if (const std::string w = speed_warning(p); !w.empty()) o["warning"] = w;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<BenchPoint> bench_points_from_json(const json& doc, const std::string& source) {
  const JsonReader r(source, lra::ErrorKind::usage);
  if (!doc.is_object()) r.fail("", "expected a JSON object, got " + r.shown(doc));
  const json& schema = r.require(doc, "schema", "schema");
  if (!schema.is_string() || schema.get<std::string>() != kBenchSchema) {
    r.fail("schema", "expected \"" + std::string(kBenchSchema) + "\", got " + r.shown(schema));
  }
  const json& results = r.require(doc, "results", "results");
  if (!results.is_array()) r.fail("results", "expected an array, got " + r.shown(results));
  std::vector<BenchPoint> points;
  std::map<std::pair<std::string, int64_t>, std::size_t> first;  // (plugin, length) -> index
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string at = "results[" + std::to_string(i) + "]";
    BenchPoint p = point_from_json(r, results[i], at);
    const auto [it, inserted] = first.emplace(std::make_pair(p.plugin, p.length), i);
    if (!inserted) {
      r.fail(at, "plugin \"" + p.plugin + "\" at length " + std::to_string(p.length) +
                     " already measured in results[" + std::to_string(it->second) + "]");
    }
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace lra::host::bench
