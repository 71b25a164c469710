// forgetting/memory_length.h — the memory-length rules (docs/forgetting.md,
// "The memory lengths"), computed over the tested lengths L1 < ... < Lk.
//
// Headline (the Forgetting Curve paper's Table 3: "the maximum length at
// which copy accuracy surpasses 99%"): the largest tested length where the
// condition holds, wherever it fails before. Secondary, "prefix": the largest
// tested length up to which the condition holds at every tested length —
// stricter, and 0 for any curve that misses at its first, very short length.
//
// A point with an error (not ok) never holds: its accuracy is unknown. So a
// failed last point makes the headline value the largest ok length that
// holds, never censored; in the prefix rule a failed point ends the scan.
// censored = the condition holds at Lk, which is ok (the paper's "> Lk").
// No points: {0, not censored}. Read copy_mean and lm_mean: summarize the
// points first (finalize does).
#pragma once

#include <string>
#include <vector>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

// Fine-grained memory length: the largest tested Lj with copy_mean > 0.99.
MemoryLength fine_length(const std::vector<CurvePoint>& points);

// Coarse-grained memory length: the largest tested Lj with
// copy_mean - lm_mean > 0.01.
MemoryLength coarse_length(const std::vector<CurvePoint>& points);

// The prefix rule: the largest tested Lj such that copy_mean > 0.99 at every
// tested Li <= Lj; 0 when it fails (or errs) at L1.
MemoryLength fine_length_prefix(const std::vector<CurvePoint>& points);

// The prefix rule with the condition copy_mean - lm_mean > 0.01.
MemoryLength coarse_length_prefix(const std::vector<CurvePoint>& points);

// Summarizes every ok point that holds accuracies (a point read from a file
// may hold only means), then sets complete and the four lengths. Throws
// lra::Error(data) when the lengths are not strictly ascending, or from
// summarize.
void finalize(Curve& curve);

// A memory length is a claim that copying beats the LM at the length it
// names; the paired t-test of copy against LM accuracy there (the point's
// p_value) says whether the repetitions support it. At p >= kSignificanceLevel
// the length is no headline.
inline constexpr double kSignificanceLevel = 0.05;

// A length in words with its significance, as every printed length carries it:
// "4096 tokens (p = 1.2e-05)", "> 8192 tokens (p = 3e-09)", "0 tokens" (no
// tested length holds), "not significant: 149 tokens at p = 0.68 >= 0.05 (...)",
// or, for a curve read with means only, "... (significance unknown: ...)".
std::string describe_length(const Curve& curve, const MemoryLength& length);

// Short forms for tables and legends: "149", "> 8192"; marked_length adds
// " n.s." where describe_length says "not significant".
std::string length_text(const MemoryLength& length);
std::string marked_length(const Curve& curve, const MemoryLength& length);

}  // namespace lra::host::forgetting
