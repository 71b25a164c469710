// Small generic helpers shared by the built-in task readers (Text, Retrieval,
// Image, ListOps, Pathfinder). Torch-free; one copy so that every task draws
// subsets, names cache folders and formats counts the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lra::tasks {

// The examples kept when a split of n is capped to `cap` (cap <= 0 or >= n:
// all of them, 0..n-1). Otherwise the first `cap` entries of a Fisher-Yates
// permutation of 0..n-1 driven by std::mt19937_64(seed) -- for i = n-1 down to
// 1, j uniform in [0, i] by rejection sampling, swap(p[i], p[j]) -- sorted
// back into file order. Hand-rolled rather than std::shuffle or
// std::uniform_int_distribution, whose output differs between standard
// libraries: the result is the same on every platform, and tests and cached
// subsets depend on it bit for bit. Do not change it.
std::vector<int64_t> choose_subset(int64_t n, int64_t cap, uint64_t seed);

// FNV-1a 64-bit of `s`, as 16 lower-case hex digits. Deterministic and
// platform-independent (unlike std::hash); it names generated-dataset cache
// folders (gen-<hash>), so it must never change.
std::string fnv1a64_hex(const std::string& s);

// Runs fn(i) for every i in [0, n) on up to `threads` threads (threads <= 1:
// on the calling thread), handing out indices in increasing order in blocks
// of `chunk`. When calls throw, the remaining blocks are skipped and the
// exception of the lowest failing index is rethrown once every thread has
// stopped: every block below a failing one was claimed before it and runs to
// its end (or its own first failure), so with a deterministic fn the same
// exception comes back whatever the thread count. A larger chunk suits many
// cheap calls (one image each), chunk 1 a few expensive ones (one file each).
void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn, int64_t chunk = 1);

// n with thousands separators: 25000 -> "25,000", -1234 -> "-1,234".
std::string with_commas(int64_t n);

// Generators write into a staging folder next to the final one and rename it
// when complete. The staging folder's name: final_dir + ".tmp-<host>-<pid>-<n>"
// (host: this machine's name, so a shared data folder tells the machines apart).
std::string staging_folder_name(const std::string& final_dir, int counter);

// Removes the staging folders of `final_dir` left by interrupted generations:
// those of this machine (or of the old ".tmp-<pid>-<n>" form) whose process is
// gone. Staging folders of running processes and of other machines are kept.
// Each removal is said on stderr ("lrahost: note: ..."); the removed paths are
// returned.
std::vector<std::string> remove_stale_staging(const std::string& final_dir);

}  // namespace lra::tasks
