#include "generator.h"

#include "stream_rng.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "lra/status.h"
#include "task_util.h"

namespace lra::listops {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kChunk = 64;                    // accepted trees per chunk (fixes the output)
constexpr int64_t kMaxAttemptsPerChunk = 20'000'000;  // backstop for near-impossible params

// The task generators' shared stream (tasks/common/stream_rng.h): xoshiro256**
// with our own bounded-integer and real mappings, the same everywhere.
using lra::tasks::Rng;
using lra::tasks::splitmix64;

uint64_t chunk_seed(uint64_t seed, int64_t chunk) {
  uint64_t s = seed;
  uint64_t a = splitmix64(&s) ^ static_cast<uint64_t>(chunk);
  return splitmix64(&a);
}

struct Open {
  size_t slot;   // where the operator id goes once drawn
  int64_t left;  // children still to grow
  int64_t depth; // depth of those children
};

// One draw of the reference's generate_tree (same order of random choices:
// r, then value or arity, children, operator). Stops early once the tree can
// only be rejected, which leaves the distribution of accepted trees unchanged.
bool grow(Rng& rng, const GeneratorParams& p, std::string& codes, std::vector<Open>& open) {
  codes.clear();
  open.clear();
  const uint64_t arities = static_cast<uint64_t>(p.max_args - 1);
  auto node = [&](int64_t depth) {
    const double r = depth < p.max_depth ? rng.uniform() : 1.0;
    if (r > 0.25) {
      codes.push_back(static_cast<char>(kDigit0 + rng.below(10)));
    } else {
      open.push_back({codes.size(), static_cast<int64_t>(2 + rng.below(arities)), depth + 1});
      codes.push_back(0);
    }
  };
  node(1);
  while (!open.empty()) {
    if (static_cast<int64_t>(codes.size() + open.size()) >= p.max_length) return false;
    Open& o = open.back();
    if (o.left == 0) {
      codes[o.slot] = static_cast<char>(kMin + rng.below(4));
      codes.push_back(static_cast<char>(kClose));
      open.pop_back();
    } else {
      --o.left;
      node(o.depth);  // may grow `open`; `o` is not used afterwards
    }
  }
  const auto len = static_cast<int64_t>(codes.size());
  return len > p.min_length && len < p.max_length;
}

std::vector<Example> make_chunk(const GeneratorParams& p, uint64_t seed, int64_t chunk) {
  Rng rng(chunk_seed(seed, chunk));
  std::vector<Example> out;
  out.reserve(kChunk);
  std::string codes;
  std::vector<Open> open;
  for (int64_t attempts = 0; static_cast<int64_t>(out.size()) < kChunk; ++attempts) {
    if (attempts == kMaxAttemptsPerChunk)
      throw Error(ErrorKind::rules, "listops generator: fewer than " + std::to_string(kChunk) + " of " +
                                        std::to_string(kMaxAttemptsPerChunk) +
                                        " random trees fall inside (min_length, max_length); "
                                        "widen the length range or raise max_depth/max_args");
    if (grow(rng, p, codes, open)) out.push_back({codes, evaluate(codes)});
  }
  return out;
}

struct ChunkResult {
  std::vector<Example> examples;
  std::exception_ptr error;
};

}  // namespace

void validate(const GeneratorParams& p) {
  auto fail = [](const std::string& m) { throw Error(ErrorKind::rules, "listops: " + m); };
  if (p.max_depth < 1) fail("max_depth must be >= 1, got " + std::to_string(p.max_depth));
  if (p.max_args < 2) fail("max_args must be >= 2, got " + std::to_string(p.max_args));
  if (p.min_length < 0) fail("min_length must be >= 0, got " + std::to_string(p.min_length));
  if (p.max_length - p.min_length < 2)
    fail("lengths are accepted strictly between min_length and max_length, so max_length must be at "
         "least min_length + 2 (got " + std::to_string(p.min_length) + ", " + std::to_string(p.max_length) + ")");
  // The largest tree: operators with max_args children down to max_depth.
  int64_t longest = 1;
  for (int64_t d = p.max_depth - 1; d >= 1 && longest <= p.min_length; --d) longest = 2 + p.max_args * longest;
  if (longest <= p.min_length)
    fail("no tree with max_depth " + std::to_string(p.max_depth) + " and max_args " + std::to_string(p.max_args) +
         " is longer than min_length " + std::to_string(p.min_length) + "; raise max_depth or max_args");
}

std::vector<Example> generate(const GeneratorParams& p, int64_t count, uint64_t seed, int threads) {
  validate(p);
  if (count < 0) throw Error(ErrorKind::rules, "listops: example count must be >= 0");
  std::vector<Example> out;
  if (count == 0) return out;
  out.reserve(static_cast<size_t>(count));  // never reallocates: `seen` points into it
  std::unordered_set<std::string_view> seen;
  seen.reserve(static_cast<size_t>(count));

  const int workers = std::max(1, std::min(threads, 256));
  const int64_t window = 2 * workers + 2;  // chunks computed ahead of the merge
  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, ChunkResult> ready;
  int64_t next = 0, merging = 0;
  bool stop = false;

  std::vector<std::thread> pool;
  struct Joiner {  // stops and joins the workers on every exit path
    std::mutex& mu;
    std::condition_variable& cv;
    bool& stop;
    std::vector<std::thread>& pool;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lk(mu);
        stop = true;
      }
      cv.notify_all();
      for (auto& t : pool) t.join();
    }
  } joiner{mu, cv, stop, pool};

  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (;;) {
        int64_t c;
        {
          std::unique_lock<std::mutex> lk(mu);
          cv.wait(lk, [&] { return stop || next < merging + window; });
          if (stop) return;
          c = next++;
        }
        ChunkResult r;
        try {
          r.examples = make_chunk(p, seed, c);
        } catch (...) {
          r.error = std::current_exception();
        }
        {
          std::lock_guard<std::mutex> lk(mu);
          ready.emplace(c, std::move(r));
        }
        cv.notify_all();
      }
    });
  }

  // Merge chunk by chunk in order; dedup by tree (same as by serialised text).
  const int64_t max_candidates = 20 * count + 100 * kChunk;
  int64_t candidates = 0;
  while (static_cast<int64_t>(out.size()) < count) {
    ChunkResult r;
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return ready.count(merging) != 0; });
      auto it = ready.find(merging);
      r = std::move(it->second);
      ready.erase(it);
      ++merging;
    }
    cv.notify_all();
    if (r.error) std::rethrow_exception(r.error);
    for (auto& e : r.examples) {
      if (static_cast<int64_t>(out.size()) == count) break;
      ++candidates;
      if (seen.count(e.codes)) continue;
      out.push_back(std::move(e));
      seen.insert(out.back().codes);
    }
    if (candidates >= max_candidates && static_cast<int64_t>(out.size()) < count)
      throw Error(ErrorKind::rules, "listops generator: only " + std::to_string(out.size()) +
                                        " distinct trees among " + std::to_string(candidates) + " draws, " +
                                        std::to_string(count) + " requested; widen (min_length, max_length)");
  }
  return out;
}

void append_source(const std::string& codes, std::string* out) {
  // Pass 1: arity of each operator (the opening needs arity + 1 parentheses).
  std::vector<int32_t> arity(codes.size(), 0);
  std::vector<size_t> open;
  for (size_t i = 0; i < codes.size(); ++i) {
    const int id = static_cast<unsigned char>(codes[i]);
    if (!open.empty() && id != kClose) ++arity[open.back()];
    if (id >= kMin && id <= kSm) open.push_back(i);
    if (id == kClose && !open.empty()) open.pop_back();
  }
  // Pass 2: ((((op c1) c2) ... ck) ]) as the reference's to_string prints it.
  const auto& vocab = vocabulary();
  size_t depth = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    const int id = static_cast<unsigned char>(codes[i]);
    if (id >= kMin && id <= kSm) {
      for (int32_t k = 0; k <= arity[i]; ++k) out->append("( ");
      out->append(vocab[id]);
      out->push_back(' ');
      ++depth;
      continue;
    }
    if (id == kClose) {
      out->append("] )");
      --depth;
    } else {
      out->push_back(static_cast<char>('0' + id - kDigit0));
    }
    if (depth > 0) out->append(" ) ");
  }
}

std::string to_source(const std::string& codes) {
  std::string s;
  append_source(codes, &s);
  return s;
}

SplitSizes default_split(int64_t total) {
  SplitSizes s;
  s.val = s.test = total / 50;
  s.train = total - s.val - s.test;
  return s;
}

namespace {

void write_tsv(const fs::path& path, const Example* begin, const Example* end) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(ErrorKind::data, "cannot create " + path.string() + ": " + std::strerror(errno));
  std::string buf = "Source\tTarget\n";
  bool ok = true;
  for (const Example* e = begin; e != end && ok; ++e) {
    append_source(e->codes, &buf);
    buf.push_back('\t');
    buf.push_back(static_cast<char>('0' + e->label));
    buf.push_back('\n');
    if (buf.size() > (1u << 22)) {
      ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
      buf.clear();
    }
  }
  if (ok) ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok)
    throw Error(ErrorKind::data, "cannot write " + path.string() + ": " + std::strerror(ok ? errno : err) +
                                     " (disk full or folder not writable?)");
}

void write_text(const fs::path& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f && std::fclose(f) != 0) ok = false;
  if (!ok) throw Error(ErrorKind::data, "cannot write " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

void write_dataset(const std::string& dir, const std::vector<Example>& examples, const SplitSizes& sizes,
                   const std::string& params_txt) {
  if (sizes.train < 0 || sizes.val < 0 || sizes.test < 0 ||
      sizes.total() != static_cast<int64_t>(examples.size()))
    throw Error(ErrorKind::internal, "listops write_dataset: split sizes do not add up to the example count");
  fs::path final_dir = fs::path(dir).lexically_normal();
  if (final_dir.filename().empty()) final_dir = final_dir.parent_path();
  static std::atomic<int> counter{0};
  // A killed generation leaves its staging folder: the next one into the same
  // place removes it (and says so) before staging its own.
  lra::tasks::remove_stale_staging(final_dir.string());
  const fs::path tmp = lra::tasks::staging_folder_name(final_dir.string(), counter++);

  struct Cleanup {  // removes the temporary folder unless it became the final one
    fs::path path;
    ~Cleanup() {
      std::error_code ec;
      if (!path.empty()) fs::remove_all(path, ec);
    }
  } cleanup{};
  std::error_code ec;
  if (final_dir.has_parent_path()) fs::create_directories(final_dir.parent_path(), ec);
  if (!fs::create_directory(tmp, ec) || ec)
    throw Error(ErrorKind::data, "cannot create folder " + tmp.string() + ": " + ec.message() +
                                     " (choose a writable data folder)");
  cleanup.path = tmp;

  const Example* e = examples.data();
  const char* names[3] = {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"};
  const int64_t counts[3] = {sizes.train, sizes.val, sizes.test};
  for (int s = 0; s < 3; ++s) {
    write_tsv(tmp / names[s], e, e + counts[s]);
    e += counts[s];
  }
  if (!params_txt.empty()) write_text(tmp / "params.txt", params_txt);

  if (!fs::exists(final_dir)) {
    fs::rename(tmp, final_dir, ec);
    if (!ec) {
      cleanup.path.clear();
      return;
    }
    if (!fs::is_directory(final_dir))  // not a lost race with a parallel writer
      throw Error(ErrorKind::data, "cannot rename " + tmp.string() + " to " + final_dir.string() + ": " + ec.message());
  }
  // The folder exists: replace the files one by one (each rename is atomic).
  std::vector<std::string> files(names, names + 3);
  if (!params_txt.empty()) files.push_back("params.txt");
  for (const auto& name : files) {
    fs::rename(tmp / name, final_dir / name, ec);
    if (ec) throw Error(ErrorKind::data, "cannot move " + name + " into " + final_dir.string() + ": " + ec.message());
  }
}

}  // namespace lra::listops
