// What the sandboxed evaluation hands back: the predicted class of every
// example of its inputs file, in order, and nothing else (no accuracy, no
// device name, no free text), so the verifier scores with its own labels and
// publishes no text produced inside the sandbox.
// Layout: 8 bytes "LRAPRED1", uint64 count, count x int32 class (host order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lra::host {

void write_predictions_file(const std::filesystem::path& file, const std::vector<int32_t>& classes);

// The file's exact size for `count` predictions (the verifier reads no more).
uint64_t predictions_file_size(uint64_t count);

// Parses the bytes of a predictions file (read by the verifier with
// read_untrusted_file): exactly `count` classes, each in [0, num_classes).
// Throws lra::Error(plugin) saying what is wrong (never quoting the bytes).
std::vector<int32_t> parse_predictions(const std::string& bytes, uint64_t count, int64_t num_classes);

}  // namespace lra::host
