// Checkpoints of a training run: everything needed to continue exactly where
// a run stopped — parameters, optimizer moments, the update counter (which
// fixes the schedule position and the data order), the CPU random generator,
// the running report window, the history — plus the run's identity, so a
// resume against another manifest, plugin or seed is refused.
//
// Layout: <run>/checkpoints/step-<N>/{model.pt, optimizer.pt, rng.pt, state.json}.
// Each is written into step-<N>.tmp/ and renamed into place when complete,
// so a kill at any instant leaves the previous checkpoint intact; the two
// newest of this run are kept (prune_checkpoints).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace lra::host {

struct CheckpointState {
  int64_t step = 0;              // updates done
  nlohmann::json identity;       // what must match for a resume (see cmd_run)
  nlohmann::json progress;       // trainer bookkeeping: window sums, best validation, history
};

// Writes checkpoint step-<state.step>, then prunes (prune_checkpoints);
// returns the folders pruning left alone as not this run's (the caller warns).
std::vector<std::filesystem::path> save_checkpoint(const std::filesystem::path& run_dir, const CheckpointState& state,
                                                   torch::nn::Module& model, torch::optim::Optimizer& optimizer);

// Deletes this run's checkpoints older than step `newest`, keeping the newest
// one of them beside step-<newest>. "This run's" means is_checkpoint_of with
// `identity`; any other step-N folder (foreign, empty, malformed, a later
// step) is left alone and returned.
std::vector<std::filesystem::path> prune_checkpoints(const std::filesystem::path& run_dir, int64_t newest,
                                                     const nlohmann::json& identity);

// A complete checkpoint (its four files regular, no symlinks) whose
// state.json has this step and this run identity.
bool is_checkpoint_of(const std::filesystem::path& dir, int64_t step, const nlohmann::json& identity);

// The checkpoint folders under run_dir: complete ones ascending by step, and
// folders named step-* that are not step-<N> (or whose N is out of range),
// with the reason; those are ignored (the caller warns), never parsed.
struct CheckpointList {
  std::vector<std::pair<int64_t, std::filesystem::path>> complete;
  std::vector<std::pair<std::filesystem::path, std::string>> ignored;
};
CheckpointList list_checkpoints(const std::filesystem::path& run_dir);

// The newest complete checkpoint folder under run_dir, if any.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir);

// Reads state.json (for the identity check before anything is built).
CheckpointState read_checkpoint_state(const std::filesystem::path& checkpoint);

// Checks what a resume relies on, against the run's manifest: "step" is an
// integer in 1..total_steps and equals the folder's step-<N>, and the progress
// fields are present with the right types (history an array, best_val_step an
// integer within the run). Throws Error(data) saying which field is wrong.
void check_checkpoint_state(const std::filesystem::path& checkpoint, int64_t total_steps);

// Restores parameters, optimizer state and the CPU random generator.
// Tensors are loaded onto `device` (where the model and optimizer live).
void load_checkpoint(const std::filesystem::path& checkpoint, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer, const torch::Device& device);

}  // namespace lra::host
