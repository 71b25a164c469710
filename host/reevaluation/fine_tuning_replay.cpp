#include "reevaluation/fine_tuning_replay.h"

#include <cmath>
#include <cstdio>
#include <map>

#include <c10/util/Exception.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>
#include <torch/torch.h>

#include "common/text.h"
#include "pretrain/fine_tuning_start.h"
#include "reevaluation/model_parameters.h"
#include "train/module_io.h"
#include "train/optimizer_groups.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

using text::short_number;

}  // namespace

nlohmann::json replay_fine_tuning_start(const FineTuningReplayInput& in, const RunRecord& run, const Manifest& config,
                                        const lra::Dataset& data, const MixerFactory& factory, int abi_minor,
                                        const torch::Device& device, RunReevaluation& r) {
  const std::string what = std::to_string(in.updates) + " fine-tuning update" + (in.updates == 1 ? "" : "s");
  try {
    // The classifier as the run built it, then the weights the fine-tuning starts from.
    torch::manual_seed(run.seed);
    Classifier model(BackboneSpec{run.model, data.info.vocab_size, data.info.num_classes, run.seed, data.info.paired,
                                  run.summary},
                     factory);
    model->to(device);
    load_module(*model, in.encoder, device);
    const NamedTensors start = snapshot_tensors(*model);

    // The run's fine-tuning, stopped after its first updates.
    const auto mixers = model->mixers();
    TrainerOptions t;
    t.train = config.train;
    t.device = device;
    t.max_len = run.model.max_len;
    t.micro_batch = in.micro_batch;
    t.bf16 = in.bf16;
    t.groups = optimizer_groups(*model, mixers, abi_minor, run.plugin_name, config.train);
    t.stop_at_update = in.updates;
    seed_fine_tuning(static_cast<int64_t>(run.seed));
    spdlog::logger quiet("fine-tuning replay", std::make_shared<spdlog::sinks::null_sink_mt>());
    const TrainResult trained = train_and_evaluate(model, data, t, quiet);
    const NamedTensors replayed = snapshot_tensors(*model);

    // Against the run's weights after the same updates.
    const NamedTensors recorded = read_model_file(in.start);
    std::map<std::string, const at::Tensor*> by_name;
    for (const auto& [name, tensor] : recorded) by_name[name] = &tensor;
    if (recorded.size() != replayed.size())
      throw Error(ErrorKind::data, "it holds " + std::to_string(recorded.size()) + " tensors, the model has " +
                                       std::to_string(replayed.size()));
    bool identical = true;
    double apart = 0, moved = 0;  // squared L2: replay to recorded, replay to its start
    for (size_t i = 0; i < replayed.size(); ++i) {
      const auto& [name, mine] = replayed[i];
      const auto it = by_name.find(name);
      if (it == by_name.end() || !it->second->sizes().equals(mine.sizes()))
        throw Error(ErrorKind::data, "its tensor " + name + " is missing or of another shape");
      const at::Tensor theirs = it->second->to(mine.scalar_type());
      identical = identical && torch::equal(theirs, mine);
      if (!mine.is_floating_point()) {
        apart += torch::equal(theirs, mine) ? 0.0 : INFINITY;
        continue;
      }
      apart += (theirs.to(torch::kDouble) - mine.to(torch::kDouble)).pow(2).sum().item<double>();
      moved += (start[i].second.to(torch::kDouble) - mine.to(torch::kDouble)).pow(2).sum().item<double>();
    }
    apart = std::sqrt(apart);
    moved = std::sqrt(moved);
    const double tolerance = in.same_device ? kReplayToleranceSameDevice : kReplayToleranceOtherDevice;
    const double ratio = moved > 0 ? apart / moved : (apart > 0 ? INFINITY : 0.0);
    const nlohmann::json report = {{"updates", trained.steps},
                                   {"identical", identical},
                                   {"distance", std::isfinite(apart) ? nlohmann::json(apart) : nlohmann::json("inf")},
                                   {"replayed_distance_moved", moved},
                                   {"ratio", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json("inf")},
                                   {"tolerance", tolerance},
                                   {"same_device_and_precision", in.same_device}};
    if (identical) {
      r.facts.push_back("fine-tuning start replayed: " + what + " from encoder.pt, through the mixer process, give " +
                        "pretraining/" + kFineTuningStartWeights + " bit for bit");
    } else if (ratio <= tolerance) {
      r.facts.push_back("fine-tuning start replayed: " + what + " from encoder.pt end " + short_number(apart) +
                        " (L2) from pretraining/" + kFineTuningStartWeights + ", " + short_number(ratio) +
                        " of the " + short_number(moved) + " the updates moved (allowed " + short_number(tolerance) +
                        (in.same_device ? ": another thread count or build)" : ": another device or precision)"));
    } else {
      r.reasons.push_back("the fine-tuning did not start from pretraining/encoder.pt: " + what +
                          " from it, replayed here, end " + short_number(apart) + " (L2) from the recorded weights after "
                          "those updates (pretraining/" + kFineTuningStartWeights + "), " + short_number(ratio) +
                          " times the " + short_number(moved) + " the updates moved them (allowed " +
                          short_number(tolerance) + (in.same_device ? " on the run's device and precision)" : " on another "
                          "device or precision)"));
    }
    return report;
  } catch (const c10::Error& e) {
    r.reasons.push_back("the fine-tuning's start could not be replayed (" +
                        text::first_line(e.what_without_backtrace()) + ")");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::data) throw;
    r.reasons.push_back("pretraining/" + std::string(kFineTuningStartWeights) + " does not fit the model (" +
                        e.what() + ")");
  }
  return nullptr;
}

}  // namespace lra::host
