// The parameter count of a submitted model.pt, made by the verifier itself
// with LibTorch's archive reader (no plugin code runs in this process).
// Every tensor of the file counts, parameters and mixer buffers alike (a
// buffer is state the plugin's code may change during training, so it can be
// capacity too), except
//   - the host backbone's own fixed buffers (the sinusoidal position table),
//     whose names and shapes the verifier knows from its reference model, and
//   - tensors whose values are exactly those of the freshly initialised model
//     (fixed randomness such as Linformer's fixed projections or Performer's
//     random features: drawn from the seed, never trained).
// The fresh model comes from the sandboxed code; if it lied by returning
// trained values there, those same values drive the fresh-weights pass,
// which then scores above chance and fails the submission.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace lra::host {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Every tensor of `m` (parameters and buffers, wire::module_tensors order), copied to the CPU:
// a model's state kept while the model goes on (its fresh initialisation, a replay's start).
NamedTensors snapshot_tensors(const torch::nn::Module& m);

// Every tensor of a file written by save_module (train/module_io.h), in order.
// Throws lra::Error(data) naming the file for anything unreadable or in another format.
NamedTensors read_model_file(const std::filesystem::path& file);

struct ModelFileCount {
  int64_t counted = 0;       // values of every tensor but the two kinds below
  int64_t host_buffers = 0;  // values of the backbone's fixed buffers
  int64_t unchanged = 0;     // values equal to the freshly initialised model's
  size_t tensors = 0;
};

// `host_buffers`: name -> shape of the backbone's fixed buffers. `fresh` must
// hold the same names with the same shapes as `trained`, else lra::Error(plugin).
ModelFileCount count_trained_values(const NamedTensors& trained, const NamedTensors& fresh,
                                    const std::map<std::string, std::vector<int64_t>>& host_buffers);

}  // namespace lra::host
