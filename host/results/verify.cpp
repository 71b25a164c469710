#include "results/verify.h"
#include "common/json_input.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>

#include "lra/status.h"
#include "results/result.h"
#include "results/signature.h"
#include "results/closed_checks.h"
#include "common/sha256.h"
#include "rules/rules.h"

namespace lra::host {
namespace {

using nlohmann::json;

// Allowed JSON types of a field, as a bit set.
enum Type : unsigned {
  kString = 1u << 0,
  kBool = 1u << 1,
  kInteger = 1u << 2,
  kNumber = 1u << 3,  // any number, integer or not
  kObject = 1u << 4,
  kArray = 1u << 5,
  kNull = 1u << 6,
};

bool has_type(const json& v, unsigned types) {
  switch (v.type()) {
    case json::value_t::string: return types & kString;
    case json::value_t::boolean: return types & kBool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return types & (kInteger | kNumber);
    case json::value_t::number_float: return types & kNumber;
    case json::value_t::object: return types & kObject;
    case json::value_t::array: return types & kArray;
    case json::value_t::null: return types & kNull;
    default: return false;
  }
}

std::string type_words(unsigned types) {
  std::vector<std::string> words;
  if (types & kString) words.emplace_back("a string");
  if (types & kBool) words.emplace_back("a boolean");
  if (types & kInteger) words.emplace_back("an integer");
  if (types & kNumber) words.emplace_back("a number");
  if (types & kObject) words.emplace_back("an object");
  if (types & kArray) words.emplace_back("an array");
  if (types & kNull) words.emplace_back("null");
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// A short rendering of a value for messages.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::string describe(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return std::string(v.type_name()) + " " + show(v);
}

std::string quoted(const std::string& s) { return show(json(s)); }

// An integer field that fits in int64, else nullopt.
std::optional<std::int64_t> as_i64(const json* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  return std::nullopt;
}

// "sha256:" prefix dropped, lowercased; nullopt unless 64 hex digits remain.
std::optional<std::string> normalise_sha256(std::string s) {
  if (s.rfind("sha256:", 0) == 0) s.erase(0, 7);
  if (s.size() != 64) return std::nullopt;
  for (char& c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

class Checker {
 public:
  explicit Checker(const json& root) : root_(root) {}

  // The field at a dotted path if present and of an allowed type; otherwise
  // nullptr and, for a required field, a reason. A field below a missing or
  // mistyped parent is not reported again.
  const json* field(const std::string& path, unsigned types, bool required) {
    const json* cur = &root_;
    std::size_t start = 0;
    for (;;) {
      const std::size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur->is_object()) return nullptr;  // the parent was reported
      const auto it = cur->find(key);
      if (it == cur->end()) {
        if (required) fail("missing required field '" + path + "'");
        return nullptr;
      }
      cur = &*it;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (!has_type(*cur, types)) {
      fail("field '" + path + "' must be " + type_words(types) + ", found " + describe(*cur));
      return nullptr;
    }
    return cur;
  }
  const json* require(const std::string& path, unsigned types) { return field(path, types, true); }
  const json* optional(const std::string& path, unsigned types) { return field(path, types, false); }

  // An array whose elements all have one of `types`.
  const json* array_of(const std::string& path, unsigned types, bool required) {
    const json* a = field(path, kArray, required);
    if (!a) return nullptr;
    for (std::size_t i = 0; i < a->size(); ++i) {
      if (!has_type((*a)[i], types)) {
        fail("field '" + path + "[" + std::to_string(i) + "]' must be " + type_words(types) +
             ", found " + describe((*a)[i]));
        return nullptr;
      }
    }
    return a;
  }

  void fail(std::string reason) { reasons.push_back(std::move(reason)); }

  std::vector<std::string> reasons;

 private:
  const json& root_;
};

std::string join_strings(const json& array) { return show(array); }

void check_accuracy(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_number()) return;
  const double x = v->get<double>();
  if (!(x >= 0.0 && x <= 1.0)) {
    c.fail("field '" + path + "' must be an accuracy in [0, 1], found " + show(*v));
  }
}

void check_sha256_field(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_string()) return;
  if (!normalise_sha256(v->get<std::string>())) {
    c.fail("field '" + path + "' must be a SHA-256 hex digest, found " + show(*v));
  }
}

void check_non_negative(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_number()) return;
  if (!(v->get<double>() >= 0.0)) c.fail("field '" + path + "' must not be negative, found " + show(*v));
}

}  // namespace

VerifyReport verify_result_json(const json& result, const OfficialLookup& official) {
  VerifyReport report;
  if (!result.is_object()) {
    report.readable = false;
    report.valid = false;
    report.reasons.push_back(std::string("not a result file: the JSON value is ") +
                             describe(result) + ", expected an object");
    return report;
  }
  report.readable = true;
  Checker c(result);

  // --- schema -----------------------------------------------------------------
  if (const json* s = c.require("schema", kString); s && *s != kResultSchema) {
    c.fail("schema is " + show(*s) + ", expected " + quoted(kResultSchema) +
           " (written by another version of lrahost?)");
  }

  // --- required fields and their types --------------------------------------------
  const json* division = c.require("division", kString);
  const json* division_reasons = c.array_of("division_reasons", kString, true);
  const json* valid = c.require("valid", kBool);
  const json* invalid_reasons = c.array_of("invalid_reasons", kString, true);

  if (c.require("host", kObject)) {
    for (const char* k : {"host.version", "host.git_revision", "host.build_type", "host.compiler",
                          "host.torch_version"}) {
      c.optional(k, kString);
    }
    c.optional("host.git_dirty", kBool | kNull);
    c.optional("host.cuda_version", kString | kNull);
  }
  c.require("system", kObject);

  const json* total = nullptr;
  if (c.require("plugin", kObject)) {
    c.require("plugin.name", kString);
    c.require("plugin.version", kString);
    c.optional("plugin.file", kString | kNull);
    check_sha256_field(c, "plugin.sha256", c.require("plugin.sha256", kString));
    c.require("plugin.options", kObject);
    if (c.require("plugin.params", kObject)) {
      total = c.require("plugin.params.total", kInteger);
      if (const json* mixer = c.optional("plugin.params.mixer", kInteger | kNull);
          mixer && total && mixer->is_number()) {
        const auto m = as_i64(mixer), t = as_i64(total);
        if (m && t && (*m < 0 || *m > *t)) {
          c.fail("plugin.params.mixer " + show(*mixer) + " must be between 0 and plugin.params.total " +
                 show(*total));
        }
      }
    }
    c.array_of("plugin.capabilities", kString, false);
  }

  const json* task_name = nullptr;
  const json* manifest_sha = nullptr;
  const json* preset = nullptr;
  if (c.require("task", kObject)) {
    task_name = c.require("task.name", kString);
    c.require("task.manifest", kString);
    manifest_sha = c.require("task.manifest_sha256", kString);
    check_sha256_field(c, "task.manifest_sha256", manifest_sha);
    preset = c.optional("task.preset", kString | kNull);
    c.require("task.data_fingerprint", kString | kObject);
    if (c.require("task.examples", kObject))
      for (const char* k : {"task.examples.train", "task.examples.val", "task.examples.test"})
        check_non_negative(c, k, c.require(k, kInteger));
  }

  const json* reference_params = nullptr;
  const json* ratio = nullptr;
  const json* budget = nullptr;
  if (c.require("rules", kObject)) {
    reference_params = c.require("rules.reference_params", kInteger);
    ratio = c.require("rules.param_budget_ratio", kNumber);
    budget = c.require("rules.param_budget", kInteger);
  }

  c.require("seed", kInteger);
  const json* overrides = c.array_of("overrides", kString, true);
  c.require("config", kObject);

  if (c.require("metrics", kObject)) {
    for (const char* k : {"metrics.test_accuracy", "metrics.best_val_accuracy",
                          "metrics.final_train_accuracy"}) {
      check_accuracy(c, k, c.require(k, kNumber));
    }
    check_accuracy(c, "metrics.majority_class_rate",
                   c.optional("metrics.majority_class_rate", kNumber | kNull));
    check_non_negative(c, "metrics.final_train_loss", c.require("metrics.final_train_loss", kNumber));
    check_non_negative(c, "metrics.best_val_step", c.optional("metrics.best_val_step", kInteger | kNull));
  }

  c.array_of("history", kObject, true);
  if (c.require("timing", kObject)) {
    for (const char* k : {"timing.wall_seconds", "timing.train_seconds", "timing.steps_per_second",
                          "timing.peak_memory_bytes"}) {
      check_non_negative(c, k, c.optional(k, kNumber | kNull));
    }
  }
  c.array_of("command_line", kString, true);
  c.require("started_at", kString);
  c.require("finished_at", kString);

  // --- digest -----------------------------------------------------------------
  if (const json* digest = c.require("digest", kString)) {
    const std::string recomputed = compute_digest(result);
    if (digest->get<std::string>() != recomputed) {
      c.fail("content was edited after the run (digest " + digest->get<std::string>() +
             " != recomputed " + recomputed + ")");
    }
  }

  // --- signature (over the digest) ------------------------------------------------
  if (const SignatureCheck sig = check_signature(result); sig.present) {
    if (sig.valid) report.signed_by = sig.key_id;
    else c.fail(sig.problem);
  }
  c.optional("model", kObject);
  check_sha256_field(c, "model.sha256", c.optional("model.sha256", kString));

  // --- parameter budget ---------------------------------------------------------
  {
    const auto ref = as_i64(reference_params);
    const auto bud = as_i64(budget);
    const auto tot = as_i64(total);
    if (reference_params && (!ref || *ref <= 0)) {
      c.fail("rules.reference_params must be a positive integer, found " + show(*reference_params));
    }
    const bool ratio_ok = ratio && std::isfinite(ratio->get<double>()) && ratio->get<double>() > 0.0;
    if (ratio && !ratio_ok) {
      c.fail("rules.param_budget_ratio must be a positive number, found " + show(*ratio));
    }
    if (budget && !bud) c.fail("rules.param_budget is out of range: " + show(*budget));
    if (total && (!tot || *tot < 0)) {
      c.fail("plugin.params.total must be a non-negative integer, found " + show(*total));
    }
    if (ref && *ref > 0 && ratio_ok && bud) {
      const std::int64_t expected = param_budget(*ref, ratio->get<double>());
      if (*bud != expected) {
        c.fail("rules.param_budget " + std::to_string(*bud) + " != floor(rules.reference_params " +
               std::to_string(*ref) + " * rules.param_budget_ratio " + show(*ratio) + ") = " +
               std::to_string(expected));
      }
    }
    if (tot && bud && *tot > *bud) {
      c.fail("plugin.params.total " + std::to_string(*tot) + " exceeds rules.param_budget " +
             std::to_string(*bud) + " (the model may have at most that many parameters)");
    }
  }

  // --- division -----------------------------------------------------------------
  bool closed = false;
  if (division) {
    const std::string claimed = division->get<std::string>();
    if (claimed != "closed" && claimed != "open") {
      c.fail("division is " + show(*division) + ", expected \"closed\" or \"open\"");
    } else if (claimed == "closed") {
      // Every closed condition must be positively established; a missing
      // field has already been reported above.
      closed = division_reasons && overrides && task_name && manifest_sha;
      if (overrides && !overrides->empty()) {
        closed = false;
        c.fail("division is \"closed\" but overrides is not empty: " + join_strings(*overrides) +
               " (any override makes a result open)");
      }
      if (division_reasons && !division_reasons->empty()) {
        closed = false;
        c.fail("division is \"closed\" but division_reasons is not empty: " +
               join_strings(*division_reasons));
      }
      if (preset && preset->is_string() && *preset != "official") {
        closed = false;
        c.fail("division is \"closed\" but task.preset is " + show(*preset) +
               " (only the official preset can be closed)");
      }
      if (task_name && manifest_sha) {
        const std::string name = task_name->get<std::string>();
        const std::vector<OfficialManifest> released = official ? official(name) : std::vector<OfficialManifest>{};
        const auto have = normalise_sha256(manifest_sha->get<std::string>());
        const OfficialManifest* match = nullptr;
        for (const auto& r : released)
          if (have && normalise_sha256(r.sha256) == have) match = &r;
        if (released.empty()) {
          closed = false;
          c.fail("division is \"closed\" but this host has no official manifest for task " + quoted(name) +
                 " (only official tasks can be closed)");
        } else if (!match) {
          std::string known;
          for (const auto& r : released) known += (known.empty() ? "" : ", ") + r.release + " " + r.sha256;
          closed = false;
          c.fail("division is \"closed\" but task.manifest_sha256 " + manifest_sha->get<std::string>() +
                 " is not a released official manifest of task " + quoted(name) + " (released: " + known +
                 "; the manifest was not an official one, or comes from a release newer than this host)");
        } else {
          // The release is derived from the hash; a name in the file must agree with it.
          const json* claimed = c.optional("task.manifest_release", kString | kNull);
          if (claimed && claimed->is_string() && claimed->get<std::string>() != match->release) {
            closed = false;
            c.fail("task.manifest_release " + show(*claimed) + " does not match the manifest's hash, which is release " +
                   quoted(match->release) + " of task " + quoted(name));
          } else {
            std::vector<std::string> protocol;
            if (check_closed_against_protocol(result, *match, &protocol)) {
              report.release = *match;
            } else {
              closed = false;
              for (auto& why : protocol) c.fail(std::move(why));
            }
          }
        }
      }
    }
  }
  if (!closed) report.release.reset();
  report.division = closed ? "closed" : "open";

  // --- the host's own verdict -------------------------------------------------------
  const std::size_t problems = c.reasons.size();
  bool claimed_valid = false;
  if (valid && invalid_reasons) {
    claimed_valid = valid->get<bool>();
    if (claimed_valid && !invalid_reasons->empty()) {
      c.fail("valid is true but invalid_reasons is not empty: " + join_strings(*invalid_reasons));
    } else if (!claimed_valid && invalid_reasons->empty()) {
      c.fail("valid is false but invalid_reasons is empty (the host must say why)");
    }
    if (!claimed_valid) {
      for (const auto& r : *invalid_reasons) c.fail("recorded as invalid by the host: " + r.get<std::string>());
    }
  }
  if (claimed_valid && problems > 0) {
    c.fail("the file claims valid = true, but " + std::to_string(problems) +
           (problems == 1 ? " check fails" : " checks fail"));
  }

  report.valid = claimed_valid && c.reasons.empty();
  report.reasons = std::move(c.reasons);
  return report;
}

VerifyReport verify_result_file(const std::filesystem::path& file, const OfficialLookup& official) {
  auto unreadable = [&](std::string reason) {
    VerifyReport r;
    r.path = file.string();
    r.reasons.push_back(std::move(reason));
    return r;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return unreadable("cannot read: it is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return unreadable(std::string("cannot read: ") + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return unreadable("cannot read: I/O error");

  json parsed;
  try {
    parsed = parse_json_input(ss.str());
  } catch (const JsonInputError& e) {
    return unreadable(std::string("not valid JSON: ") + e.what());
  }
  VerifyReport report = verify_result_json(parsed, official);
  report.path = file.string();
  // The weights beside the result must be the ones it records (absent: the result travels alone).
  const std::filesystem::path model = file.parent_path() / "model.pt";
  const json* recorded = json_at(parsed, {"model", "sha256"});
  if (recorded && recorded->is_string() && std::filesystem::is_regular_file(model, ec)) {
    const std::string have = sha256_file(model);
    if (normalise_sha256(recorded->get<std::string>()) != have) {
      report.reasons.push_back("model.pt was changed after the run (sha256 " + have + " != recorded model.sha256 " +
                               recorded->get<std::string>() + ")");
      report.valid = false;
    }
  }
  return report;
}

nlohmann::json to_json(const VerifyReport& r) {
  return {{"path", r.path},
          {"readable", r.readable},
          {"division", r.division.empty() ? json(nullptr) : json(r.division)},
          {"valid", r.valid},
          {"signed_by", r.signed_by.empty() ? json(nullptr) : json(r.signed_by)},
          {"release", r.release ? json(r.release->release) : json(nullptr)},
          {"release_note", r.release && !r.release->note.empty() ? json(r.release->note) : json(nullptr)},
          {"superseded_by",
           r.release && !r.release->superseded_by.empty() ? json(r.release->superseded_by) : json(nullptr)},
          {"reasons", r.reasons}};
}

std::vector<std::filesystem::path> collect_result_files(const std::vector<std::filesystem::path>& args) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(p, ec);
    if (ec) key = p.lexically_normal();
    if (seen.insert(key).second) out.push_back(p);
  };
  for (const fs::path& arg : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    if (!fs::exists(st)) {
      throw lra::Error(lra::ErrorKind::usage,
                       "no such file or directory: '" + arg.string() +
                           "' (give result.json files or folders that contain them)");
    }
    if (!fs::is_directory(st)) {
      add(arg);
      continue;
    }
    std::vector<fs::path> found;
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code fec;
      if (it->path().filename() == kResultFileName && it->is_regular_file(fec)) found.push_back(it->path());
    }
    if (ec) {
      throw lra::Error(lra::ErrorKind::usage,
                       "cannot list '" + arg.string() + "': " + ec.message());
    }
    if (found.empty()) {
      throw lra::Error(lra::ErrorKind::usage,
                       "no " + std::string(kResultFileName) + " found under '" + arg.string() + "'");
    }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) add(p);
  }
  return out;
}

}  // namespace lra::host
