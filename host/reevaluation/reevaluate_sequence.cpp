// judge_sequence_passes (reevaluation/sequence_scoring.h): the verdict on a
// sequence task's re-evaluated passes, in reevaluation.json's words.
#include <cmath>
#include <cstdio>

#include "common/json_input.h"
#include "reevaluation/sequence_scoring.h"
#include "reevaluation/verifier_setting.h"

namespace lra::host {
using nlohmann::json;

void judge_sequence_passes(const SequencePasses& p, const SequenceJudgement& j, const json& result,
                           RunReevaluation& r) {
  auto fail = [&](std::string why) { r.reasons.push_back(std::move(why)); };
  const size_t all = p.order.size();
  const PositionCounts pub = unshuffled_counts(p.trained, p.order, 0, p.public_examples);
  const int64_t correct = total_correct(pub), positions = total_positions(pub);
  const double recomputed = positions > 0 ? static_cast<double>(correct) / static_cast<double>(positions) : 0.0;

  // 8. The public test split, per scored position.
  const json* acc = json_at(result, {"metrics", "test_accuracy"});
  const double recorded = acc && acc->is_number() ? acc->get<double>() : -1;
  const json* recorded_positions = json_at(result, {"metrics", "test_positions"});
  if (!recorded_positions || !recorded_positions->is_number_integer() || recorded_positions->get<int64_t>() != positions)
    fail("metrics.test_positions is " + (recorded_positions ? recorded_positions->dump() : std::string("missing")) +
         ", the test split has " + std::to_string(positions) + " scored positions");
  const json* examples = json_at(result, {"task", "examples", "test"});
  if (!examples || !examples->is_number_integer() || examples->get<int64_t>() != static_cast<int64_t>(p.public_examples))
    fail("task.examples.test is " + (examples ? examples->dump() : std::string("missing")) + ", the test split has " +
         std::to_string(p.public_examples) + " examples");
  r.facts.push_back("test accuracy per position recomputed " + percent(recomputed) + " (" + std::to_string(correct) +
                    "/" + std::to_string(positions) + " positions) on " + j.device + ", " + j.precision + "; recorded " +
                    percent(recorded));
  const int64_t recorded_correct = std::llround(recorded * static_cast<double>(positions));
  if (j.same_setting ? correct != recorded_correct : std::abs(recomputed - recorded) > j.tolerance + 1e-12)
    fail("metrics.test_accuracy is " + percent(recorded) + ", the submitted model scores " + percent(recomputed) +
         " of the official test split's scored positions" +
         accuracy_rule_words(j.same_setting, j.same_device, j.tolerance));
  r.report["test"] = {{"scored", "position"},
                      {"recorded_accuracy", recorded},
                      {"recomputed_accuracy", recomputed},
                      {"correct", correct},
                      {"positions", positions},
                      {"examples", static_cast<int64_t>(p.public_examples)},
                      {"device", j.device},
                      {"precision", j.precision},
                      {"same_device_and_precision", j.same_device},
                      {"tolerance", j.same_setting ? 0.0 : j.tolerance},
                      {"published_accuracy", j.same_setting ? recorded : recomputed}};

  // 9. The private set: the same cells drawn at a secret seed.
  if (all > p.public_examples) {
    const PositionCounts priv = unshuffled_counts(p.trained, p.order, p.public_examples, all);
    const ProportionTest t = clustered_gap_test(pub, priv);
    char line[320];
    std::snprintf(line, sizeof line,
                  "private test set: %s (%lld/%lld positions in %zu examples, secret seed, interleaved with the public "
                  "split); public minus private %+.2f points, z = %.2f (examples as clusters), one-sided p = %.3g",
                  percent(t.p2).c_str(), static_cast<long long>(total_correct(priv)),
                  static_cast<long long>(total_positions(priv)), all - p.public_examples, 100 * t.gap, t.z, t.p_value);
    r.facts.push_back(line);
    const bool flagged = t.p_value < j.significance;
    if (flagged) {
      char why[360];
      std::snprintf(why, sizeof why,
                    "the public test accuracy %s is above the private test set's %s by %.2f points (one-sided test "
                    "with examples as clusters, p = %.3g < %.3g): the model was likely trained or selected on the "
                    "public test split",
                    percent(t.p1).c_str(), percent(t.p2).c_str(), 100 * t.gap, t.p_value, j.significance);
      fail(why);
    }
    r.report["private"] = {{"examples", static_cast<int64_t>(all - p.public_examples)},
                           {"positions", total_positions(priv)}, {"correct", total_correct(priv)},
                           {"accuracy", t.p2}, {"gap", t.gap}, {"z", t.z}, {"p_value", t.p_value},
                           {"significance", j.significance}, {"flagged", flagged}, {"seed", "secret (not recorded)"}};
  } else {
    r.report["private"] = nullptr;
    r.facts.push_back("private test set: none (the task's data are not drawn from a seed)");
  }

  // 10. With freshly initialised weights the same code must not beat the majority target.
  const PositionCounts fresh = unshuffled_counts(p.fresh, p.order, 0, all);
  const ProportionTest t = clustered_above_rate_test(fresh, p.majority_rate);
  const bool flagged = t.p_value < j.significance;
  char line[256];
  std::snprintf(line, sizeof line,
                "freshly initialised weights: %s of %lld positions against the majority-target rate %s, one-sided p = "
                "%.3g (examples as clusters)",
                percent(t.p1).c_str(), static_cast<long long>(total_positions(fresh)), percent(p.majority_rate).c_str(),
                t.p_value);
  r.facts.push_back(line);
  if (flagged) {
    char why[320];
    std::snprintf(why, sizeof why,
                  "predictions do not depend on the trained weights: with freshly initialised weights the plugin "
                  "scores %s of the scored positions, above the majority-target rate %s (p = %.3g < %.3g)",
                  percent(t.p1).c_str(), percent(p.majority_rate).c_str(), t.p_value, j.significance);
    fail(why);
  }
  r.report["fresh_weights"] = {{"positions", total_positions(fresh)}, {"correct", total_correct(fresh)},
                               {"accuracy", t.p1}, {"majority_target_rate", p.majority_rate},
                               {"p_value", t.p_value}, {"significance", j.significance}, {"flagged", flagged}};
}

}  // namespace lra::host
