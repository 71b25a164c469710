// Reader of ListOps TSV files (LRA release layout or our generator's output).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "expr.h"
#include "lra/task.h"

namespace lra::listops {

// The reference preprocessing: "]" -> "X", "(" and ")" deleted, split on
// whitespace, canonical ids (expr.h); unknown tokens map to kOov.
std::vector<int32_t> tokenize(std::string_view source);

struct ReadReport {
  int64_t examples = 0;
  int64_t oov_tokens = 0;        // tokens outside the vocabulary (kept as kOov, as the reference does)
  int64_t oov_examples = 0;
  std::string first_oov;         // "file:line: 'token'" of the first one
  int64_t label_mismatches = 0;  // Target differs from the value of Source
  std::string first_mismatch;    // "file:line" of the first one
  int64_t max_tokens = 0;
  // Examples LRA's generator cannot have made (lra_benchmarks/data/listops.py
  // with its defaults: 500 < length < 2000 tokens, depth <= 10, 2..10
  // operands per operator): a set of another depth or length in the
  // release's layout is not LRA's release.
  int64_t outside_lra_bounds = 0;
  std::string first_outside_lra_bounds;  // "file:line: why" of the first one
};

// Reads one split. Every example is validated (header, two columns, target
// 0-9, well-formed expression); the first defect throws lra::Error(data)
// naming the file and 1-based line. OOV tokens and label mismatches are only
// counted into *report.
Split read_tsv(const std::string& path, ReadReport* report = nullptr);

}  // namespace lra::listops
