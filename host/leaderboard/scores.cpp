#include "leaderboard/scores.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/json_input.h"
#include "lra/status.h"
#include "reference/reference_mixers.h"

namespace lra::host {
namespace {

using nlohmann::json;

// Path-X is FAIL when the pooled accuracy is not significantly above chance
// at this level (the paper: "no better than chance").
constexpr double kSignificance = 0.05;
constexpr double kChance = 0.5;
constexpr const char* kPathX = "pathx";

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& what) {
  throw Error(ErrorKind::data, source + ": " + field + " " + what +
                                   " (expected a result.json written by lrahost run; check with lrahost verify)");
}

std::string text_at(const ScoreInput& in, std::initializer_list<const char*> keys, const std::string& field,
                    bool required, const std::string& fallback = "") {
  const json* v = json_at(in.result, keys);
  if (v == nullptr) {
    if (required) bad(in.source, field, "is missing");
    return fallback;
  }
  if (!v->is_string()) bad(in.source, field, "is not a string");
  return v->get<std::string>();
}

int64_t integer_at(const ScoreInput& in, std::initializer_list<const char*> keys, const std::string& field) {
  const json* v = json_at(in.result, keys);
  if (v == nullptr) bad(in.source, field, "is missing");
  if (!v->is_number_integer() ||
      (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
    bad(in.source, field, "is not an integer");
  return v->get<int64_t>();
}

// The fields scoring reads from one result, checked.
struct Facts {
  std::string plugin, version, sha256, options_key, division, task;
  json options;                      // as recorded; for a built-in mixer, its difference from the reference
  std::optional<std::string> table;  // built-in mixer: the reference table compared with
  std::vector<std::string> differs;  // built-in mixer: options that differ from its task's entry
  int64_t seed = 0, test_examples = 0;
  std::optional<double> majority;  // metrics.majority_class_rate, when the result has a usable one
  double accuracy = 0;
  std::string digest;
  std::string made_with;  // open results: the preset (or custom manifest) and the overrides
  std::string protocol;   // "from scratch" or "self-pretrained" (a pretraining record)
};

// How an open result was configured, so that a 60-step run never sits in one
// entry with full smoke runs: "preset smoke", "preset smoke; overrides
// train.steps=60", "manifest my.toml". Empty for closed results (the protocol).
std::string made_with(const json& result, const std::string& division) {
  if (division == "closed") return "";
  std::string out;
  const json* preset = json_at(result, {"task", "preset"});
  const json* manifest = json_at(result, {"task", "manifest"});
  if (preset && preset->is_string()) out = "preset " + preset->get<std::string>();
  else if (manifest && manifest->is_string()) out = "manifest " + manifest->get<std::string>();
  else out = "preset unknown";
  // Under a reference configuration (verified before a result gets here) the
  // entry's own settings differ per task: the configuration's label stands
  // for them, so its six tasks make one entry; only the user's own overrides are listed.
  const json* configuration = json_at(result, {"reference_configuration"});
  std::set<std::string> from_configuration;
  if (configuration && configuration->is_object()) {
    out = (*configuration).value("label", std::string("reference configuration")) + "; " + out;
    if (const json* settings = json_at(*configuration, {"settings"}); settings && settings->is_object())
      for (const auto& [key, value] : settings->items()) from_configuration.insert(key + "=" + setting_text(value));
  }
  const json* overrides = json_at(result, {"overrides"});
  std::string listed;
  if (overrides && overrides->is_array())
    for (const auto& o : *overrides) {
      const std::string text = o.is_string() ? o.get<std::string>() : o.dump();
      if (!from_configuration.count(text)) listed += (listed.empty() ? "" : ", ") + text;
    }
  if (!listed.empty()) out += "; overrides " + listed;
  return out;
}

// A built-in mixer's options against its task's reference settings. Built-in:
// run recorded a reference_settings object (null: not the host's own plugin;
// absent: a result from before the field) and the table knows the name. The
// table is the one the result's config names (reference_table_of_result: a
// claimed table counts only for results from before manifests named one),
// whether the smoke overrides apply to an open result is the result's word,
// and the verdict comes from the options. The smoke overrides never apply to
// a closed result.
void compare_with_reference(const ScoreInput& in, Facts& f) {
  const json* claimed = json_at(in.result, {"plugin", "reference_settings"});
  if (!claimed || !claimed->is_object()) return;
  const ReferenceTable* table = reference_table_of_result(in.result);
  if (!table) {  // a config naming a table this host does not have (a newer host's): not judged as used
    f.table = json_at(in.result, {"config", "rules", "reference_settings"})->get<std::string>();
    f.differs = {"(a reference settings table this host does not have)"};
    return;
  }
  if (!table->has_mixer(f.plugin)) return;
  const json* preset = json_at(in.result, {"task", "preset"});
  const json* entry_label = json_at(*claimed, {"entry"});
  const bool smoke = f.division != "closed" &&
                     ((preset && *preset == "smoke") ||
                      (entry_label && entry_label->is_string() &&
                       entry_label->get<std::string>().find("/smoke/") != std::string::npos));
  f.table = table->file();
  const auto entry = table->entry(f.plugin, f.task, smoke);
  json differing = json::object();
  if (!entry) {
    f.differs = {kNoReferenceEntry};  // a task the table does not cover
    differing = f.options;
  } else {
    // A run under a reference configuration is compared with the settings it
    // ran with: the reference entry overlaid with the configuration's options.
    ReferenceEntry compared = *entry;
    if (const json* c = json_at(in.result, {"reference_configuration", "table"}); c && c->is_string())
      if (const ReferenceTable* cfg = find_reference_table(c->get<std::string>()); cfg && cfg->is_configuration())
        if (const auto ce = cfg->entry(f.plugin, f.task, false))
          for (const auto& [key, setting] : ce->settings)
            if (key.rfind("mixer.", 0) == 0) compared.settings[key.substr(6)] = setting;
    f.differs = reference_differences(compared, f.options);
    for (const auto& name : f.differs) differing[name] = f.options.contains(name) ? f.options[name] : json(nullptr);
  }
  f.options = differing;
}

Facts read_facts(const ScoreInput& in) {
  if (!in.result.is_object()) bad(in.source, "the document", "is not a JSON object");
  Facts f;
  f.plugin = text_at(in, {"plugin", "name"}, "plugin.name", true);
  f.version = text_at(in, {"plugin", "version"}, "plugin.version", false);
  f.sha256 = text_at(in, {"plugin", "sha256"}, "plugin.sha256", false);
  f.task = text_at(in, {"task", "name"}, "task.name", true);
  // A result that does not say is not claimed closed.
  f.division = text_at(in, {"division"}, "division", false, "open");
  if (f.division != "closed" && f.division != "open") bad(in.source, "division", "is neither \"closed\" nor \"open\"");
  f.digest = text_at(in, {"digest"}, "digest", false);
  const json* options = json_at(in.result, {"plugin", "options"});
  f.options = options ? *options : json::object();
  if (!f.options.is_object()) bad(in.source, "plugin.options", "is not an object");
  compare_with_reference(in, f);
  f.options_key = (f.table ? "reference " + *f.table + " " : std::string()) +
                  f.options.dump(-1, ' ', false, json::error_handler_t::replace);
  f.seed = integer_at(in, {"seed"}, "seed");
  f.test_examples = integer_at(in, {"task", "examples", "test"}, "task.examples.test");
  if (f.test_examples <= 0) bad(in.source, "task.examples.test", "is not positive");
  const json* acc = json_at(in.result, {"metrics", "test_accuracy"});
  if (acc == nullptr) bad(in.source, "metrics.test_accuracy", "is missing");
  if (!acc->is_number() || !std::isfinite(acc->get<double>()) || acc->get<double>() < 0 || acc->get<double>() > 1)
    bad(in.source, "metrics.test_accuracy", "is not a number between 0 and 1");
  f.accuracy = acc->get<double>();
  if (const json* m = json_at(in.result, {"metrics", "majority_class_rate"});
      m && m->is_number() && std::isfinite(m->get<double>()) && m->get<double>() >= 0 && m->get<double>() <= 1)
    f.majority = m->get<double>();
  f.made_with = made_with(in.result, f.division);
  // verify has checked a pretraining record against the configuration (results/pretraining_check.cpp).
  f.protocol = in.result.contains("pretraining") ? "self-pretrained" : "from scratch";
  return f;
}

// One result inside a group, before scoring.
struct Trial {
  int64_t seed;
  double accuracy;
  int64_t test_examples;
  std::string digest, source;
  std::optional<double> majority;
};

TaskScore score_task(const std::string& task, std::vector<Trial> trials) {
  std::stable_sort(trials.begin(), trials.end(), [](const Trial& a, const Trial& b) { return a.seed < b.seed; });
  TaskScore s;
  int64_t correct = 0;
  for (const Trial& t : trials) {
    s.accuracies.push_back(t.accuracy);
    s.seeds.push_back(t.seed);
    s.test_examples += t.test_examples;
    // The evaluation counted whole examples: accuracy * examples is an integer up to rounding.
    correct += std::llround(t.accuracy * static_cast<double>(t.test_examples));
    s.mean += t.accuracy;
  }
  // The majority-class rate of the test sets, when every trial recorded one.
  if (std::all_of(trials.begin(), trials.end(), [](const Trial& t) { return t.majority.has_value(); })) {
    double sum = 0;
    for (const Trial& t : trials) sum += *t.majority;
    s.majority_class = sum / static_cast<double>(trials.size());
  }
  const double n = static_cast<double>(trials.size());
  s.mean /= n;
  double squares = 0;
  for (double a : s.accuracies) squares += (a - s.mean) * (a - s.mean);
  s.std = trials.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  s.p_above_chance = binomial_upper_tail(correct, s.test_examples, kChance);
  s.fail = task == kPathX && s.p_above_chance >= kSignificance;
  return s;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", 100 * fraction);
  return buf;
}

// What makes an entry: name, build, options (a built-in mixer's as compared
// with its reference table), how an open one was made, division and protocol
// (from-scratch and self-pretrained results never share an entry).
std::vector<std::string> entry_key(const Facts& f) {
  return {f.plugin, f.sha256, f.options_key + "\n" + f.made_with, f.division + " " + f.protocol};
}

// The entry one result would make alone, before any task is scored.
ScoreEntry entry_of(const Facts& f, const std::string& source) {
  ScoreEntry e;
  e.plugin = f.plugin;
  e.plugin_version = f.version;
  e.plugin_sha256 = f.sha256;
  e.options = f.options;
  e.division = f.division;
  e.made_with = f.made_with;
  e.protocol = f.protocol;
  if (f.table) e.reference = ReferenceUse{*f.table, f.differs.empty(), {}};
  if (f.table && !f.differs.empty()) e.reference->differs[f.task] = f.differs;
  e.sources.push_back(source);
  return e;
}

}  // namespace

const std::vector<std::string>& lra_task_order() {
  static const std::vector<std::string> tasks = {"listops", "text", "retrieval", "image", "pathfinder", kPathX};
  return tasks;
}

const std::vector<std::string>& lra_average_tasks() {
  static const std::vector<std::string> tasks = {"listops", "text", "retrieval", "image", "pathfinder"};
  return tasks;
}

void check_score_input(const ScoreInput& input) { read_facts(input); }

EntryResult entry_result(const ScoreInput& input) {
  const Facts f = read_facts(input);
  return {entry_key(f), entry_of(f, input.source), f.task, f.digest, f.seed};
}

void add_entry_result(ScoreEntry& entry, const ScoreEntry& one) {
  if (entry.reference && one.reference && !one.reference->used) {
    entry.reference->used = false;
    for (const auto& [task, names] : one.reference->differs) entry.reference->differs[task] = names;
  }
  entry.sources.insert(entry.sources.end(), one.sources.begin(), one.sources.end());
}

std::vector<ScoreEntry> aggregate_scores(const std::vector<ScoreInput>& results) {
  std::map<std::vector<std::string>, ScoreEntry> entries;
  std::map<std::vector<std::string>, std::map<std::string, std::vector<Trial>>> trials;
  for (const ScoreInput& in : results) {
    const Facts f = read_facts(in);
    const auto key = entry_key(f);
    auto& list = trials[key][f.task];
    bool duplicate = false;
    for (const Trial& t : list) {
      if (t.seed != f.seed) continue;
      // The same file reached twice (a copy): count it once. Two different runs of one seed: ambiguous.
      if (!f.digest.empty() && t.digest == f.digest) {
        duplicate = true;
        break;
      }
      throw Error(ErrorKind::data, in.source + " and " + t.source + " are both seed " + std::to_string(f.seed) +
                                       " of " + f.plugin + " on " + f.task + " (" + f.division +
                                       " division, same plugin build and options); pass only one of them");
    }
    if (duplicate) continue;
    list.push_back({f.seed, f.accuracy, f.test_examples, f.digest, in.source, f.majority});
    ScoreEntry& e = entries[key];
    if (e.sources.empty()) e = entry_of(f, in.source);
    else add_entry_result(e, entry_of(f, in.source));
  }

  std::vector<ScoreEntry> out;
  for (auto& [key, e] : entries) {
    for (auto& [task, list] : trials[key]) e.tasks[task] = score_task(task, list);
    double sum = 0;
    bool all = true;
    for (const auto& t : lra_average_tasks()) {
      const auto it = e.tasks.find(t);
      if (it == e.tasks.end()) {
        all = false;
        break;
      }
      sum += it->second.mean;
    }
    if (all) e.lra_average = sum / static_cast<double>(lra_average_tasks().size());
    out.push_back(std::move(e));
  }
  // Best average first; the map order (name, sha256, options, division) breaks ties deterministically.
  std::stable_sort(out.begin(), out.end(), [](const ScoreEntry& a, const ScoreEntry& b) {
    if (a.lra_average.has_value() != b.lra_average.has_value()) return a.lra_average.has_value();
    if (a.lra_average && *a.lra_average != *b.lra_average) return *a.lra_average > *b.lra_average;
    return a.plugin < b.plugin;
  });
  return out;
}

std::vector<std::optional<int>> competition_ranks(const std::vector<std::optional<double>>& scores) {
  std::vector<std::optional<int>> ranks;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!scores[i]) ranks.emplace_back();
    else if (i > 0 && ranks[i - 1] && *scores[i - 1] == *scores[i]) ranks.push_back(ranks[i - 1]);
    else ranks.emplace_back(static_cast<int>(i) + 1);
  }
  return ranks;
}

double binomial_upper_tail(int64_t k, int64_t n, double p) {
  if (n < 0 || !(p >= 0 && p <= 1)) throw Error(ErrorKind::internal, "binomial_upper_tail: n < 0 or p outside [0, 1]");
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (p == 0) return 0.0;
  if (p == 1) return 1.0;
  const double nd = static_cast<double>(n), log_p = std::log(p), log_q = std::log1p(-p);
  auto log_pmf = [&](int64_t i) {
    const double id = static_cast<double>(i);
    return std::lgamma(nd + 1) - std::lgamma(id + 1) - std::lgamma(nd - id + 1) + id * log_p + (nd - id) * log_q;
  };
  // Sum the tail on the side away from the mode, where the terms fall
  // monotonically: start at the largest term and add the ratios
  // pmf(i±1)/pmf(i) until they no longer change the sum. Far tails stay exact
  // in relative terms instead of vanishing in 1 - (something close to 1).
  const auto mode = static_cast<int64_t>(std::floor((nd + 1) * p));
  const double odds = p / (1 - p);
  if (k > mode) {
    double term = 1, sum = 1;  // relative to pmf(k)
    for (int64_t i = k; i < n; ++i) {
      term *= static_cast<double>(n - i) / static_cast<double>(i + 1) * odds;
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return std::min(1.0, std::exp(log_pmf(k)) * sum);
  }
  // P(X >= k) = 1 - P(X <= k - 1), the lower tail summed downwards from k - 1.
  double term = 1, sum = 1;  // relative to pmf(k - 1)
  for (int64_t i = k - 1; i > 0; --i) {
    term *= static_cast<double>(i) / (static_cast<double>(n - i + 1) * odds);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return std::clamp(1.0 - std::exp(log_pmf(k - 1)) * sum, 0.0, 1.0);
}

json to_json(const ScoreEntry& entry) {
  json tasks = json::object();
  for (const auto& [name, s] : entry.tasks) {
    tasks[name] = {{"mean", s.mean},
                   {"std", s.std},
                   {"seeds", s.seeds},
                   {"accuracies", s.accuracies},
                   {"test_examples", s.test_examples},
                   {"p_above_chance", s.p_above_chance},
                   {"fail", s.fail},
                   {"majority_class", s.majority_class ? json(*s.majority_class) : json(nullptr)}};
  }
  return {{"plugin", entry.plugin},
          {"plugin_version", entry.plugin_version},
          {"plugin_sha256", entry.plugin_sha256},
          {"options", entry.options},
          {"division", entry.division},
          {"reference_settings", entry.reference ? json{{"table", entry.reference->table},
                                                        {"used", entry.reference->used},
                                                        {"differs", entry.reference->differs}}
                                                  : json(nullptr)},
          {"tasks", tasks},
          {"lra_average", entry.lra_average ? json(*entry.lra_average) : json(nullptr)},
          {"notes", entry.notes},
          {"sources", entry.sources},
          {"made_with", entry.made_with.empty() ? json(nullptr) : json(entry.made_with)},
          {"protocol", entry.protocol},
          {"checks",
           {{"results", entry.checks.results},
            {"signed", entry.checks.signed_results},
            {"signers", entry.checks.signers},
            {"reevaluated", entry.checks.reevaluated},
            {"private_set", entry.checks.private_checked},
            {"verifiers", entry.checks.verifiers},
            {"reevaluation_unverified", entry.checks.reevaluation_unverified},
            {"reevaluation_unverified_reasons", entry.checks.unverified_reasons},
            {"reevaluated_by_author", entry.checks.reevaluated_by_author},
            {"data_not_checked", entry.checks.data_not_checked}}}};
}

std::string format_task_cell(const ScoreEntry& entry, const std::string& task) {
  const auto it = entry.tasks.find(task);
  if (it == entry.tasks.end()) return "—";
  const TaskScore& s = it->second;
  if (s.fail) return "FAIL";
  return s.accuracies.size() > 1 ? percent(s.mean) + " ± " + percent(s.std) : percent(s.mean);
}

std::string format_average_cell(const ScoreEntry& entry) {
  return entry.lra_average ? percent(*entry.lra_average) : "—";
}

}  // namespace lra::host
