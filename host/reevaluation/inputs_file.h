// The inputs of a split without its labels, as the verifier hands them to
// sandboxed plugin code: the labels of the private test set never enter the
// sandbox, so a submission cannot read them, only predict.
#pragma once

#include <filesystem>

#include "lra/task.h"

namespace lra::host {

// Writes tokens/offsets (and the second input of paired tasks) of `split`.
void write_inputs_file(const std::filesystem::path& file, const lra::Split& split);

// Reads a file write_inputs_file wrote; the labels come back as zeros.
// Throws lra::Error(data) naming the file for anything malformed.
lra::Split read_inputs_file(const std::filesystem::path& file);

// Appends every example of `from` to `to` (both paired or both not).
void append_split(lra::Split& to, const lra::Split& from);

}  // namespace lra::host
