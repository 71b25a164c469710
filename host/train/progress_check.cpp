#include "train/progress_check.h"

#include <cmath>
#include <sstream>

namespace lra::host {
namespace {

using Problem = std::optional<std::pair<std::string, std::string>>;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A number within [lo, hi] (finite), whole when `whole`; else why not.
std::optional<std::string> number_problem(const nlohmann::json& v, double lo, double hi, bool whole) {
  const auto bound = [](double b) {
    std::ostringstream s;
    s << b;  // "0", "1", "inf"
    return s.str();
  };
  const std::string range = "[" + bound(lo) + ", " + bound(hi) + "]";
  if (!v.is_number()) return "is " + (v.is_null() ? std::string("null") : v.dump(-1).substr(0, 40)) + ", expected a number in " + range;
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (whole && x != std::floor(x)))
    return "is " + v.dump() + ", expected " + (whole ? "a whole number" : "a number") + " in " + range;
  return std::nullopt;
}

bool integer_in(const nlohmann::json& v, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(hi) && (lo <= 0 || v.get<uint64_t>() >= static_cast<uint64_t>(lo));
  const int64_t x = v.get<int64_t>();
  return x >= lo && x <= hi;
}

Problem history_problem(const nlohmann::json& history, int64_t step) {
  if (!history.is_array()) return std::make_pair(std::string("progress.history"), std::string("is not an array"));
  int64_t last = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto& h = history[i];
    const std::string at = "progress.history[" + std::to_string(i) + "]";
    if (!h.is_object()) return std::make_pair(at, std::string("is not an object"));
    if (!h.contains("step") || !integer_in(h["step"], last + 1, step))
      return std::make_pair(at + ".step", "is " + (h.contains("step") ? h["step"].dump() : std::string("missing")) +
                                              ", expected an integer in " + std::to_string(last + 1) + ".." +
                                              std::to_string(step) + " (entries ascend, none after the checkpoint)");
    last = h["step"].get<int64_t>();
    for (const auto& [key, value] : h.items()) {
      if (key == "step") continue;
      const double hi = ends_with(key, "accuracy") ? 1.0 : INFINITY;
      const double lo = ends_with(key, "accuracy") || ends_with(key, "loss") || key == "lr" ? 0.0 : -INFINITY;
      if (auto why = number_problem(value, lo, hi, false)) return std::make_pair(at + "." + key, *why);
    }
  }
  return std::nullopt;
}

}  // namespace

Problem progress_problem(const nlohmann::json& p, int64_t step) {
  if (!p.is_object()) return std::make_pair(std::string("progress"), std::string("is missing or not an object"));
  struct Range {
    const char* key;
    double lo, hi;
    bool whole;
  };
  // window_count first: window_correct is bounded by it.
  for (const Range& r : {Range{"window_count", 0, INFINITY, true}, Range{"window_loss", 0, INFINITY, false},
                         Range{"final_train_loss", 0, INFINITY, false}, Range{"final_train_accuracy", 0, 1, false},
                         Range{"best_val_accuracy", 0, 1, false}}) {
    const std::string field = std::string("progress.") + r.key;
    if (!p.contains(r.key)) return std::make_pair(field, std::string("is missing"));
    if (auto why = number_problem(p[r.key], r.lo, r.hi, r.whole)) return std::make_pair(field, *why);
  }
  if (!p.contains("window_correct")) return std::make_pair(std::string("progress.window_correct"), std::string("is missing"));
  if (auto why = number_problem(p["window_correct"], 0, p["window_count"].get<double>(), true))
    return std::make_pair(std::string("progress.window_correct"), *why + " (at most progress.window_count)");
  if (!p.contains("best_val_step") || !integer_in(p["best_val_step"], -1, step))
    return std::make_pair(std::string("progress.best_val_step"),
                          "is " + (p.contains("best_val_step") ? p["best_val_step"].dump() : std::string("missing")) +
                              ", expected an integer in -1.." + std::to_string(step));
  if (!p.contains("history")) return std::make_pair(std::string("progress.history"), std::string("is missing"));
  return history_problem(p["history"], step);
}

}  // namespace lra::host
