#include "task_util.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

namespace lra::tasks {

std::vector<int64_t> choose_subset(int64_t n, int64_t cap, uint64_t seed) {
  std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  if (cap <= 0 || cap >= n) return idx;
  std::mt19937_64 rng(seed);  // its output sequence is fixed by the standard
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // accept r < limit: unbiased
    uint64_t r;
    do r = rng();
    while (r >= limit);
    std::swap(idx[i], idx[r % bound]);
  }
  idx.resize(static_cast<size_t>(cap));
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::string fnv1a64_hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // offset basis
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ull;  // FNV prime
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn, int64_t chunk) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t blocks = (n - 1) / chunk + 1;
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, blocks));
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  int64_t failed_at = n;
  std::exception_ptr error;
  auto work = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const int64_t begin = next.fetch_add(chunk);
      if (begin >= n) return;
      const int64_t end = std::min(n, begin + chunk);
      // A claimed block runs to its end even after another thread failed: a
      // lower index in it may fail too, and that is the one to report.
      for (int64_t i = begin; i < end; ++i) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (i < failed_at) {
            failed_at = i;
            error = std::current_exception();
          }
          stop = true;
          return;
        }
      }
    }
  };
  if (workers == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(workers));
    for (int64_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  for (char& c : h)
    if (c == '/' || c == '-') c = '_';  // '-' separates the fields of the name
  return h;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string staging_folder_name(const std::string& final_dir, int counter) {
  return final_dir + ".tmp-" + host_name() + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter);
}

std::vector<std::string> remove_stale_staging(const std::string& final_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  fs::path fin = fs::path(final_dir).lexically_normal();
  if (fin.filename().empty()) fin = fin.parent_path();
  const fs::path parent = fin.has_parent_path() ? fin.parent_path() : fs::path(".");
  const std::string prefix = fin.filename().string() + ".tmp-";
  const std::string here = host_name();
  std::error_code ec;
  std::vector<std::pair<fs::path, long>> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // <host>-<pid>-<n>, or <pid>-<n> (before the host was part of the name)
    const std::string rest = name.substr(prefix.size());
    const size_t last = rest.rfind('-');
    if (last == std::string::npos || !all_digits(rest.substr(last + 1))) continue;
    const size_t before = last == 0 ? std::string::npos : rest.rfind('-', last - 1);
    const std::string pid_text = before == std::string::npos ? rest.substr(0, last) : rest.substr(before + 1, last - before - 1);
    const std::string host = before == std::string::npos ? here : rest.substr(0, before);
    if (!all_digits(pid_text) || host != here) continue;
    const long pid = std::stol(pid_text);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;  // ours: a generation of this process
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to ask)
    std::error_code is_dir;
    if (!fs::is_directory(it->path(), is_dir)) continue;
    stale.emplace_back(it->path(), pid);
  }
  for (const auto& [path, pid] : stale) {
    std::error_code rm;
    fs::remove_all(path, rm);
    if (rm) {
      std::fprintf(stderr, "lrahost: warning: cannot remove %s, the staging folder of an interrupted generation "
                           "(process %ld is gone): %s\n", path.c_str(), pid, rm.message().c_str());
      continue;
    }
    std::fprintf(stderr, "lrahost: note: removed %s, the staging folder of an interrupted generation (process %ld "
                         "is gone)\n", path.c_str(), pid);
    removed.push_back(path.string());
  }
  return removed;
}

}  // namespace lra::tasks
