// The LRA release layout: imgs/<batch>/sample_<i>.png and metadata/<batch>.npy
// (text rows), as docs/data.md ("Pathfinder and Path-X") describes it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "generator.h"
#include "lra/status.h"

namespace lra::pathfinder {
namespace {

namespace fs = std::filesystem;

// Python 2's str(float): 12 significant digits, and "1.0" rather than "1".
std::string py_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

void make_dirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) throw Error(ErrorKind::data, p.string() + ": cannot create the folder (" + ec.message() + ")");
}

// Written beside the final name and renamed, so a metadata file exists only
// once its batch is complete (it is also what marks a batch as done).
void write_text_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::data, tmp.string() + ": cannot create the metadata file");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) throw Error(ErrorKind::data, tmp.string() + ": write failed (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw Error(ErrorKind::data, path.string() + ": cannot move the metadata file into place (" + ec.message() + ")");
}

}  // namespace

std::string metadata_row(const GeneratorConfig& c, int64_t batch, int64_t index, const Sample& s) {
  const std::string dl =
      c.float_distractor_length ? py_float(c.distractor_length) : std::to_string(c.distractor_length);
  return "imgs/" + std::to_string(batch) + " sample_" + std::to_string(index) + ".png " + std::to_string(index) + " " +
         std::to_string(s.label) + " " + py_float(c.continuity) + " " + std::to_string(c.contour_length) + " " + dl +
         " " + std::to_string(c.paddle_length) + " " + py_float(c.paddle_thickness) + " " + std::to_string(s.margin) +
         " " + std::to_string(c.paddle_contrasts.size());
}

void write_release(const std::string& dataset_dir, const GeneratorConfig& config, int64_t total, int64_t per_batch,
                   uint64_t seed, int threads, const std::function<void(int64_t)>& progress) {
  validate(config);
  if (total < 0) throw Error(ErrorKind::usage, "pathfinder: the number of images must be >= 0");
  if (per_batch < 1) throw Error(ErrorKind::usage, "pathfinder: images per batch must be >= 1");
  const fs::path root(dataset_dir);
  const int64_t batches = (total + per_batch - 1) / per_batch;
  auto meta_path = [&](int64_t b) { return root / "metadata" / (std::to_string(b) + ".npy"); };
  auto batch_dir = [&](int64_t b) { return root / "imgs" / std::to_string(b); };

  // Like the reference, never overwrite a batch whose metadata exists.
  for (int64_t b = 0; b < batches; ++b) {
    std::error_code ec;
    if (fs::exists(meta_path(b), ec))
      throw Error(ErrorKind::usage, meta_path(b).string() +
                                        " already exists: the generator does not overwrite a finished batch; "
                                        "delete the dataset folder or choose another output folder");
  }
  make_dirs(root / "metadata");
  for (int64_t b = 0; b < batches; ++b) make_dirs(batch_dir(b));

  std::vector<uint8_t> labels(static_cast<size_t>(total)), margins(static_cast<size_t>(total));
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
  int running = std::max(1, threads);
  auto work = [&] {
    try {
      for (int64_t k; !stop && (k = next++) < total;) {
        const Sample s = generate_image(config, seed, static_cast<uint64_t>(k));
        const fs::path png = batch_dir(k / per_batch) / ("sample_" + std::to_string(k % per_batch) + ".png");
        lra::tasks::write_png_gray(png.string(), s.image);
        labels[static_cast<size_t>(k)] = static_cast<uint8_t>(s.label);
        margins[static_cast<size_t>(k)] = static_cast<uint8_t>(s.margin);
        ++done;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
    std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };
  std::vector<std::thread> pool;
  const int workers = running;
  for (int t = 0; t < workers; ++t) pool.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return running == 0; }))
      if (progress) {
        lock.unlock();
        progress(done.load());
        lock.lock();
      }
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  for (int64_t b = 0; b < batches; ++b) {
    std::string text;
    const int64_t end = std::min(total, (b + 1) * per_batch);
    for (int64_t k = b * per_batch; k < end; ++k) {
      Sample s;
      s.label = labels[static_cast<size_t>(k)];
      s.margin = margins[static_cast<size_t>(k)];
      text += metadata_row(config, b, k - b * per_batch, s);
      text += '\n';
    }
    write_text_atomically(meta_path(b), text);
  }
  if (progress) progress(total);
}

}  // namespace lra::pathfinder
