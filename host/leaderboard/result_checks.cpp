#include "leaderboard/result_checks.h"

#include "common/json_file.h"
#include "common/json_input.h"
#include "leaderboard/site_text.h"
#include "lra/status.h"

namespace lra::host {

namespace fs = std::filesystem;
using nlohmann::json;

std::string string_at(const json& j, const char* outer, const char* inner) {
  if (!j.is_object()) return "";
  const auto o = j.find(outer);
  if (o == j.end()) return "";
  if (inner == nullptr) return o->is_string() ? o->get<std::string>() : "";
  if (!o->is_object()) return "";
  const auto i = o->find(inner);
  return i != o->end() && i->is_string() ? i->get<std::string>() : "";
}

namespace {

// Path-X's test count must be what its own data hold: the official split for
// a closed result (verify has checked it), images - floor(0.8 n) - floor(0.1 n)
// of config.data.images otherwise (tasks/pathfinder's split). nullopt: fine,
// or not checkable (a result without config.data.images).
std::optional<std::string> pathx_count_problem(const json& result) {
  const json* test = json_at(result, {"task", "examples", "test"});
  const json* images = json_at(result, {"config", "data", "images"});
  if (!test || !test->is_number_integer() || !images || !images->is_number_integer()) return std::nullopt;
  const int64_t n = images->get<int64_t>();
  const int64_t expected = n - n * 8 / 10 - n / 10;
  if (test->get<int64_t>() == expected) return std::nullopt;
  return "Path-X count rejected: task.examples.test is " + test->dump() + ", but the result's own data (config.data.images " +
         std::to_string(n) + ") hold " + std::to_string(expected) + " test images; the chance test that marks Path-X "
         "FAIL cannot take its count on trust";
}

// Caps the strings of a valid result that the pages publish and scoring
// groups by (site_text.h), before anything reads them.
void bound_result_strings(json& result) {
  for (const auto& path : std::vector<std::vector<const char*>>{
           {"plugin", "name"}, {"plugin", "version"}, {"plugin", "sha256"}, {"task", "name"}, {"task", "preset"},
           {"task", "manifest"}, {"division"}}) {
    json* v = &result;
    for (const char* key : path) v = v->is_object() && v->contains(key) ? &(*v)[key] : nullptr;
    if (v && v->is_string()) *v = site::bounded(v->get<std::string>(), site::kMaxNameBytes);
  }
  if (json* o = result.is_object() && result.contains("overrides") ? &result["overrides"] : nullptr; o && o->is_array())
    for (auto& item : *o)
      if (item.is_string()) item = site::bounded(item.get<std::string>(), site::kMaxNameBytes);
}

}  // namespace

void bound_entry(ScoreEntry& e) {
  e.made_with = site::bounded(e.made_with, site::kMaxTextBytes);
  for (auto& note : e.notes) note = site::bounded(note, site::kMaxTextBytes);
  const std::string options = site::options_text(e.options);
  if (options.size() > site::kMaxTextBytes)
    e.options = json{{"…", "options omitted: " + std::to_string(options.size()) + " bytes, over the " +
                               std::to_string(site::kMaxTextBytes) + "-byte bound of a published cell"}};
  if (e.reference)
    for (auto& [task, names] : e.reference->differs)
      for (auto& name : names) name = site::bounded(name, site::kMaxNameBytes);
}

void bound_invalid(InvalidResult& r) {
  r.source = site::bounded(r.source, site::kMaxTextBytes);
  for (std::string* s : {&r.plugin, &r.task, &r.claimed_division}) *s = site::bounded(*s, site::kMaxNameBytes);
  for (auto& why : r.reasons) why = site::bounded(why, site::kMaxTextBytes);
}

CheckedResult check_result_file(const fs::path& file, const OfficialLookup& official,
                                const std::map<std::string, std::string>& trusted_verifiers) {
  CheckedResult c{verify_result_file(file, official), json(), Reevaluation{}, std::nullopt};
  if (!c.report.readable) return c;
  c.result = read_json_file(file, ErrorKind::data, "result.json");
  bound_result_strings(c.result);
  auto refuse = [&](std::vector<std::string> reasons, std::string failed) {
    c.invalid = InvalidResult{file.string(), string_at(c.result, "plugin", "name"), string_at(c.result, "task", "name"),
                              string_at(c.result, "division", nullptr), std::move(reasons), std::move(failed)};
    return c;
  };
  if (!c.report.valid) return refuse(c.report.reasons, "verify");
  c.reevaluation = read_reevaluation(file, c.result, trusted_verifiers);
  // A trusted verifier found that the weights do not back the number: not scored. An untrusted
  // failing report cannot do this (anyone could plant one beside another's result).
  if (c.reevaluation.state == Reevaluation::State::failed) return refuse(c.reevaluation.reasons, "re-evaluation");
  c.result["division"] = c.report.division;  // what verify established, not what the file claims
  // A trusted re-evaluation on another device than the run's recorded one
  // publishes the verifier's own accuracy: the run's word on its device buys nothing.
  if (c.reevaluation.published_accuracy) c.result["metrics"]["test_accuracy"] = *c.reevaluation.published_accuracy;
  if (string_at(c.result, "task", "name") == "pathx")
    if (auto why = pathx_count_problem(c.result)) return refuse({*why}, "verify");
  return c;
}

// An entry's checks, counted over its sources.
void count_checks(ScoreEntry& entry, std::map<std::string, ResultChecks>& checks) {
  std::set<std::string> signers, verifiers, unverified;
  for (const auto& src : entry.sources) {
    const auto& c = checks[src];
    ++entry.checks.results;
    if (!c.signed_by.empty()) {
      ++entry.checks.signed_results;
      signers.insert(c.signed_by);
    }
    entry.checks.reevaluated += c.reevaluated;
    entry.checks.private_checked += c.private_checked;
    entry.checks.data_not_checked += c.data_not_checked;
    entry.checks.reevaluated_by_author += c.by_author;
    if (c.reevaluated) verifiers.insert(c.verifier);
    if (!c.unverified.empty()) {
      ++entry.checks.reevaluation_unverified;
      unverified.insert(c.unverified);
    }
  }
  entry.checks.signers.assign(signers.begin(), signers.end());
  entry.checks.verifiers.assign(verifiers.begin(), verifiers.end());
  entry.checks.unverified_reasons.assign(unverified.begin(), unverified.end());
}

}  // namespace lra::host
