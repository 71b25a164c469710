#include "pretrain/pretraining_phase.h"

#include <optional>

#include <spdlog/fmt/fmt.h>

#include "common/atomic_file.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "lra/dropout.h"
#include "lra/status.h"
#include "pretrain/pretraining_model.h"
#include "train/autocast.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/module_io.h"
#include "train/prefetch.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;

// One global batch of inputs with the positions the objective masks.
struct PretrainBatch {
  Batch inputs;      // ids/mask (and ids2/mask2), no labels
  at::Tensor masked;  // [rows, L] bool: masked_tokens only; rows = batch (x 2 paired), first inputs first
};

// The phase's objective on the host's training loop: batches of the training
// split's inputs in the trial's data order, the loss of the objective, no
// evaluation (nothing held out is read).
class PretrainingObjectiveRun final : public TrainingObjective {
 public:
  PretrainingObjectiveRun(PretrainingModel& model, const lra::Split& train, const PretrainingOptions& o,
                          const TrainConfig& t)
      : model_(model), train_(train), o_(o), t_(t), stream_(static_cast<int64_t>(train.size()), t.seed) {}

  void start(int64_t updates_done) override {
    for (int64_t i = 0; i < updates_done; ++i) stream_.next(t_.batch_size);
    next_update_ = updates_done;
    const int world = o_.dist ? o_.dist->world_size() : 1, rank = o_.dist ? o_.dist->rank() : 0;
    local_batch_ = t_.batch_size / world;
    prefetch_.emplace(
        [this, rank] {
          const auto idx = stream_.next(t_.batch_size);
          Batch all = make_input_batch(train_, idx, o_.manifest.model.max_len);
          at::Tensor masked;
          if (o_.objective == PretrainObjective::masked_tokens) {
            const at::Tensor rows = all.ids2.defined() ? at::cat({all.mask, all.mask2}, 0) : all.mask;
            masked = draw_masked_positions(rows, o_.manifest.pretrain.mask_ratio, static_cast<uint64_t>(t_.seed),
                                           next_update_++);
          }
          // This rank's slice of the global batch (and of each tower's masks).
          Batch mine = all.narrow(rank * local_batch_, local_batch_);
          if (masked.defined()) {
            const at::Tensor first = masked.narrow(0, rank * local_batch_, local_batch_);
            mine.labels = all.ids2.defined()
                              ? at::cat({first, masked.narrow(0, t_.batch_size + rank * local_batch_, local_batch_)}, 0)
                              : first;  // carried in the labels slot: a mask, never a label
          }
          return mine;
        },
        4, o_.device.is_cuda());
  }

  void accumulate_gradients(TrainWindow& w) override {
    Batch b = prefetch_->next();
    const int64_t micro = o_.micro_batch > 0 ? std::min(o_.micro_batch, local_batch_) : local_batch_;
    const uint64_t dropout_seed = lra::ops::detail::draw_cpu_seed();
    const int64_t rank_first = (o_.dist ? o_.dist->rank() : 0) * local_batch_;
    const bool paired = b.ids2.defined();
    const int64_t towers = paired ? 2 : 1;
    for (int64_t first = 0; first < local_batch_; first += micro) {
      const int64_t n = std::min(micro, local_batch_ - first);
      Batch mb = b.narrow(first, n);
      at::Tensor masked;
      if (b.labels.defined())
        masked = paired ? at::cat({b.labels.narrow(0, first, n), b.labels.narrow(0, local_batch_ + first, n)}, 0)
                        : b.labels.narrow(0, first, n);
      mb.labels = at::Tensor();
      mb = mb.to(o_.device);
      at::Tensor ids = paired ? at::cat({mb.ids, mb.ids2}, 0) : mb.ids;
      at::Tensor mask = paired ? at::cat({mb.mask, mb.mask2}, 0) : mb.mask;
      TokenLoss loss;
      {
        const lra::ops::DropoutRows rows(dropout_seed, rank_first + first, n, t_.batch_size);
        std::optional<lra::ops::DropoutTowers> two;
        if (paired) two.emplace(2);
        CudaBf16Autocast autocast(o_.bf16 && o_.device.is_cuda());
        if (masked.defined()) {
          masked = masked.to(o_.device);
          const auto logits = model_->forward(ids, mask, masked);
          loss = masked_token_loss(logits, ids, masked, t_.batch_size * towers);
        } else {
          const auto logits = model_->forward(ids, mask);
          loss = next_token_loss(logits, ids, mask, t_.batch_size * towers);
        }
      }
      backward(loss.loss);
      w.loss += loss.loss.detach().to(at::kDouble) * static_cast<double>(t_.batch_size);
      w.correct += loss.correct / static_cast<double>(towers);
    }
    w.count += static_cast<double>(local_batch_);
  }

  bool has_accuracy() const override { return true; }  // the share of predicted tokens right
  std::string evaluate(int64_t, nlohmann::json&) override { return "(pretraining reads no held-out data)"; }
  // A checkpoint's progress has the classifier's validation fields; this
  // phase validates nothing, which they say as "none yet" (step -1).
  nlohmann::json progress() const override { return {{"best_val_accuracy", 0.0}, {"best_val_step", -1}}; }

 private:
  PretrainingModel& model_;
  const lra::Split& train_;
  const PretrainingOptions& o_;
  const TrainConfig& t_;
  IndexStream stream_;
  int64_t next_update_ = 0;  // the update the prefetcher's next batch is for
  int64_t local_batch_ = 0;
  std::optional<BatchPrefetcher> prefetch_;
};

nlohmann::json phase_identity(const PretrainingOptions& o) {
  nlohmann::json id = o.identity;
  id["phase"] = "pretraining";
  id["objective"] = objective_name(o.objective);
  return id;
}

// The finished phase of this run, when its record and weights are there and agree.
std::optional<nlohmann::json> finished_phase(const fs::path& dir, const nlohmann::json& identity) {
  const fs::path record_file = dir / kPretrainingRecord;
  if (!fs::exists(record_file)) return std::nullopt;
  nlohmann::json record = read_json_file(record_file, ErrorKind::data, "the pretraining record");
  if (record.value("identity", nlohmann::json()) != identity)
    throw Error(ErrorKind::rules, "--resume: " + record_file.string() + " was written by another run (manifest, plugin, "
                                  "options, seed or data); resume with the same ones or choose another --out");
  const std::string want = record.at("weights_sha256").get<std::string>();
  const std::string have = fs::exists(dir / kPretrainedWeights) ? sha256_file(dir / kPretrainedWeights) : "(missing)";
  if (have != want)
    throw Error(ErrorKind::data, "--resume: " + (dir / kPretrainedWeights).string() + " has SHA-256 " + have + ", " +
                                     record_file.string() + " records " + want + "; remove " + dir.string() +
                                     " to pretrain afresh");
  return record;
}

}  // namespace

bool has_pretraining_files(const fs::path& run_dir) {
  const fs::path dir = run_dir / kPretrainingDir;
  std::error_code ec;
  return fs::exists(dir, ec) && !fs::is_empty(dir, ec);
}

PretrainingOutcome run_pretraining(Classifier& classifier, const lra::Dataset& data, const PretrainingOptions& o,
                                   spdlog::logger& log) {
  const Manifest& m = o.manifest;
  const TrainConfig t = pretraining_train_config(m);
  const bool lead = o.writes;
  const fs::path dir = o.run_dir / kPretrainingDir;
  const nlohmann::json identity = phase_identity(o);
  PretrainingOutcome out;

  if (o.resume)
    if (auto record = finished_phase(dir, identity)) {
      load_module(*classifier, dir / kPretrainedWeights, o.device);
      log.info("pretraining: finished earlier ({} updates, {}); fine-tuning starts from {}",
               record->at("steps").get<int64_t>(), record->at("objective").get<std::string>(),
               (dir / kPretrainedWeights).string());
      out.steps = record->at("steps").get<int64_t>();
      record->erase("identity");
      out.record = std::move(*record);
      return out;
    }
  PretrainingModel model(classifier, data.info.vocab_size, static_cast<uint64_t>(t.seed));
  TrainingLoopOptions lo;
  lo.train = t;
  lo.device = o.device;
  lo.live_progress = o.live_progress;
  lo.dist = o.dist;
  if (lead) lo.run_dir = dir;  // only rank 0 checkpoints
  lo.identity = identity;
  lo.stop_after_seconds = o.stop_after_seconds;
  if (o.make_groups) lo.groups = o.make_groups(*model, t);
  if (o.resume) {
    const CheckpointList list = list_checkpoints(dir);
    for (auto it = list.complete.rbegin(); it != list.complete.rend(); ++it) {
      if (read_checkpoint_state(it->second).identity != identity) {
        log.warn("skipping checkpoint {}: it is another run's", it->second.string());
        continue;
      }
      if (!lo.resume_from) lo.resume_from = it->second;
      else lo.resume_fallbacks.push_back(it->second);
    }
  }
  log.info("pretraining: {} on the training split's {} inputs (labels unread){}; {} updates of {}, lr {} ({})",
           objective_name(o.objective), data.train.size(),
           o.objective == PretrainObjective::masked_tokens ? fmt::format(", {:.0f}% of real tokens masked",
                                                                          100 * m.pretrain.mask_ratio)
                                                           : std::string(),
           t.steps, t.batch_size, t.lr, t.schedule);
  PretrainingObjectiveRun objective(model, data.train, o, t);
  const TrainingLoopResult r = run_training_loop(*model, objective, lo, log);
  out.steps = r.steps;
  out.report_speeds = r.report_speeds;
  if (r.stopped) {
    out.stopped = true;
    return out;
  }
  nlohmann::json record = {
      {"objective", objective_name(o.objective)},
      {"steps", r.steps},
      {"data",
       {{"split", "train"},
        {"examples", data.train.size()},
        {"inputs_fingerprint", split_inputs_fingerprint(data.train)},
        {"held_out_inputs",
         {{"val", split_inputs_fingerprint(data.val)}, {"test", split_inputs_fingerprint(data.test)}}}}},
      {"metrics", {{"final_train_loss", r.final_train_loss}, {"final_train_accuracy", r.final_train_accuracy}}},
      {"history", r.history},
      {"timing",
       {{"train_seconds", r.train_seconds},
        {"steps_per_second", r.steps_per_second},
        {"resumed_from", r.resumed_from ? nlohmann::json(r.resumed_from->filename().string()) : nlohmann::json()}}},
      {"weights_file", std::string(kPretrainingDir) + "/" + kPretrainedWeights}};
  if (o.objective == PretrainObjective::masked_tokens) record["mask_ratio"] = m.pretrain.mask_ratio;
  if (lead) {
    // The weights first, then the record naming their hash: a kill between
    // the two leaves no record, and the resume pretrains from the checkpoint.
    fs::create_directories(dir);
    const fs::path tmp = dir / (std::string(kPretrainedWeights) + ".tmp");
    save_module(*classifier, tmp);
    fs::rename(tmp, dir / kPretrainedWeights);
    record["weights_sha256"] = sha256_file(dir / kPretrainedWeights);
    nlohmann::json stored = record;
    stored["identity"] = identity;
    write_file_atomic(dir / kPretrainingRecord, stored.dump(2) + "\n");
    log.info("pretraining: done, {} updates, final loss {:.4f}, token accuracy {:.4f}; weights {} (sha256 {})", r.steps,
             r.final_train_loss, r.final_train_accuracy, (dir / kPretrainedWeights).string(),
             record["weights_sha256"].get<std::string>());
  }
  out.record = std::move(record);
  return out;
}

}  // namespace lra::host
