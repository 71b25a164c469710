#include "train/optimizer_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lra/status.h"
#include "rules/rules.h"
#include "train/lr_schedule.h"

namespace lra::host {

namespace {

std::string plugin_error(const std::string& plugin, const std::string& what) {
  return "plugin '" + plugin + "': " + what;
}

// The hint's own checks: it may only lower.
void check_hint(const lra::ParamHint& h, const std::string& plugin) {
  if (!std::isfinite(h.lr_scale) || h.lr_scale <= 0 || h.lr_scale > 1)
    throw Error(ErrorKind::plugin,
                plugin_error(plugin, fmt::format("the optimizer hint for '{}' has lr_scale {}; a hint may only lower "
                                                 "the learning rate (0 < lr_scale <= 1)",
                                                 h.name, h.lr_scale)));
  if (!std::isfinite(h.lr_max) || h.lr_max < 0)
    throw Error(ErrorKind::plugin,
                plugin_error(plugin, fmt::format("the optimizer hint for '{}' has lr_max {}; it must be 0 (no cap) or "
                                                 "a positive cap on the learning rate's peak",
                                                 h.name, h.lr_max)));
}

}  // namespace

std::vector<OptimizerGroup> optimizer_groups(const torch::nn::Module& model,
                                             const std::vector<std::shared_ptr<lra::Mixer>>& mixers,
                                             int plugin_abi_minor, const std::string& plugin,
                                             const TrainConfig& train) {
  // Each hinted parameter, by identity (the mixers' tensors are the model's).
  std::map<const void*, lra::ParamHint> hinted;
  if (plugin_abi_minor >= 2) {
    for (const auto& mixer : mixers) {
      if (!mixer) continue;
      const auto own = mixer->named_parameters(/*recurse=*/true);
      std::set<std::string> seen;
      for (lra::ParamHint& h : mixer->optimizer_hints()) {
        check_hint(h, plugin);
        if (!seen.insert(h.name).second)
          throw Error(ErrorKind::plugin, plugin_error(plugin, "the optimizer hints name '" + h.name + "' twice"));
        const at::Tensor* p = own.find(h.name);
        if (!p) {
          std::string names;
          for (const auto& kv : own) names += (names.empty() ? "" : ", ") + kv.key();
          throw Error(ErrorKind::plugin, plugin_error(plugin, "an optimizer hint names '" + h.name +
                                                                  "', which is not one of the mixer's parameters (" +
                                                                  names + ")"));
        }
        hinted[p->unsafeGetTensorImpl()] = h;
      }
    }
  }

  // The schedule's peak, for caps (the schedule scaled down, as S4's own
  // optimizer groups scale their base rate under the shared scheduler).
  double peak = 0;
  if (std::any_of(hinted.begin(), hinted.end(), [](const auto& kv) { return kv.second.lr_max > 0; })) {
    const LrSchedule schedule(train);
    for (int64_t s = 0; s < train.steps; ++s) peak = std::max(peak, schedule(s));
  }

  std::vector<OptimizerGroup> groups(1);
  groups[0].rule = fmt::format("weight decay {}, the schedule's learning rate", train.weight_decay);
  for (const auto& kv : model.named_parameters(/*recurse=*/true)) {
    const auto it = hinted.find(kv.value().unsafeGetTensorImpl());
    OptimizerGroup* g = &groups[0];
    if (it != hinted.end()) {
      const lra::ParamHint& h = it->second;
      double factor = h.lr_scale;
      std::string lr_words = h.lr_scale < 1 ? fmt::format("learning rate x {}", h.lr_scale) : "";
      if (h.lr_max > 0 && peak > h.lr_max) {
        factor *= h.lr_max / peak;
        lr_words = fmt::format("learning rate x {:.4g} (peak {:.4g} capped at {:.4g}{})", factor, peak, h.lr_max,
                               h.lr_scale < 1 ? fmt::format(", then x {}", h.lr_scale) : "");
      }
      const bool no_wd = h.no_weight_decay || train.weight_decay == 0;
      if (factor < 1 || h.no_weight_decay) {
        auto same = std::find_if(groups.begin() + 1, groups.end(), [&](const OptimizerGroup& o) {
          return o.no_weight_decay == no_wd && o.lr_factor == factor;
        });
        if (same == groups.end()) {
          OptimizerGroup n;
          n.no_weight_decay = no_wd;
          n.lr_factor = factor;
          n.rule = std::string(no_wd ? "no weight decay" : fmt::format("weight decay {}", train.weight_decay)) + ", " +
                   (lr_words.empty() ? "the schedule's learning rate" : lr_words);
          groups.push_back(n);
          same = groups.end() - 1;
        }
        g = &*same;
      }
    }
    g->names.push_back(kv.key());
    g->elements += kv.value().numel();
  }
  return groups;
}

void log_hinted_groups(const std::vector<OptimizerGroup>& groups, spdlog::logger& log) {
  for (size_t g = 1; g < groups.size(); ++g)
    log.info("optimizer hints: {} parameter tensor(s), {} numbers: {}", groups[g].names.size(),
             with_commas(groups[g].elements), groups[g].rule);
}

nlohmann::json optimizer_record(const std::vector<OptimizerGroup>& groups, double weight_decay) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : groups)
    list.push_back({{"parameters", g.names.size()},
                    {"elements", g.elements},
                    {"names", g.names},
                    {"weight_decay", g.no_weight_decay ? 0.0 : weight_decay},
                    {"lr_factor", g.lr_factor},
                    {"rule", g.rule}});
  return {{"groups", list}};
}

}  // namespace lra::host
