// Saving and loading a model's parameters and buffers so that any name a
// plugin registers round-trips.
//
// torch::nn::Module::save writes each submodule as a TorchScript submodule
// whose attribute names end up in generated Python-like source; loading that
// source back fails for names that are Python keywords ("in", "def",
// "class", ...) with "expected ident but found 'in'". These functions write a
// flat archive instead: the full dotted names as one list of strings and the
// tensors under index keys ("t0", "t1", ...), so no registered name is ever
// parsed. Files written by Module::save (earlier lrahost versions) still load.
#pragma once

#include <filesystem>

#include <torch/nn/module.h>

namespace lra::host {

// Every parameter and buffer of `model` (recursively), by full name.
void save_module(const torch::nn::Module& model, const std::filesystem::path& file);

// Restores every parameter and buffer of `model` from a file written by
// save_module (or by Module::save), loading tensors onto `device`. A name the
// model has and the file lacks, a name the file has and the model lacks, or a
// shape that differs throws c10::Error naming it.
void load_module(torch::nn::Module& model, const std::filesystem::path& file, const torch::Device& device);

// Copies every parameter and buffer of `from` into the tensor of the same
// name in `to` (the same architecture, freshly built): what saving `from`
// and loading the file into `to` gives, without the file. A name either
// lacks, or another shape, throws c10::Error naming it.
void copy_module_state(const torch::nn::Module& from, torch::nn::Module& to);

}  // namespace lra::host
