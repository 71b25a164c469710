#include "pathfinder_data.h"

#include <cstdlib>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <new>

#include "lra/status.h"
#include "png_io.h"
#include "task_util.h"

namespace lra::pathfinder {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorKind::data, "pathfinder: " + msg); }

// Images are many and cheap: parallel_for hands them out 64 at a time.
constexpr int64_t kImagesPerClaim = 64;

std::string read_text(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail("cannot open " + path);
  std::string s;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) s.append(buf, got);
  if (std::ferror(f.get())) fail("cannot read " + path);
  return s;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail("cannot open image " + path);
  std::vector<uint8_t> data;
  uint8_t buf[1 << 15];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.insert(data.end(), buf, buf + got);
  if (std::ferror(f.get())) fail("cannot read image " + path);
  return data;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string shorten(const std::string& row) { return row.size() <= 200 ? row : row.substr(0, 200) + "..."; }

}  // namespace

SplitSizes split_sizes(int64_t n) {
  SplitSizes s;
  s.train = n * 8 / 10;  // floor(0.8 n), exact in integers
  s.val = n / 10;        // floor(0.1 n)
  s.test = n - s.train - s.val;
  return s;
}

std::vector<MetadataFile> list_metadata(const std::string& dataset_dir, std::vector<std::string>* ignored) {
  const fs::path meta = fs::path(dataset_dir) / "metadata";
  std::error_code ec;
  if (!fs::is_directory(meta, ec))
    fail("no metadata folder " + meta.string() + " (a dataset folder holds imgs/ and metadata/)");
  std::vector<MetadataFile> files;
  std::vector<std::string> other;
  for (fs::directory_iterator it(meta, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    const std::string stem = p.stem().string();
    if (p.extension() == ".npy" && all_digits(stem) && it->is_regular_file())
      files.push_back({std::stoll(stem), p.string()});
    else
      other.push_back(p.string());
  }
  if (ec) fail("cannot list " + meta.string() + ": " + ec.message());
  if (files.empty())
    fail("no metadata files <batch>.npy (0.npy, 1.npy, ...) in " + meta.string() +
         " (incomplete download or extraction?)");
  std::sort(files.begin(), files.end(), [](const MetadataFile& a, const MetadataFile& b) {
    return a.batch != b.batch ? a.batch < b.batch : a.path < b.path;  // "01.npy" and "1.npy": by name
  });
  std::sort(other.begin(), other.end());
  if (ignored) ignored->insert(ignored->end(), other.begin(), other.end());
  return files;
}

void parse_metadata(const std::string& text, const std::string& file, const std::string& dataset_dir,
                    std::vector<ImageRef>* out) {
  const fs::path dir(dataset_dir);
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank
    std::vector<std::string> f;
    size_t a = 0;
    while (f.size() < 6) {
      const size_t b = line.find(' ', a);
      f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    const std::string where = file + ":" + std::to_string(line_no);
    if (f.size() < 4 || f[0].empty() || f[1].empty() || (f[3] != "0" && f[3] != "1"))
      fail("malformed metadata row at " + where + ": \"" + shorten(line) +
           "\" (expected fields separated by single spaces: imgs/<batch> sample_<i>.png <i> <label 0|1> ...)");
    // The image is named relative to the dataset folder and must stay inside
    // it: an absolute path or one that climbs out with ".." is refused, so a
    // metadata file cannot make the reader open files elsewhere.
    const fs::path rel = (fs::path(f[0]) / f[1]).lexically_normal();
    if (fs::path(f[0]).is_absolute() || fs::path(f[1]).is_absolute() || rel.empty() || *rel.begin() == ".." ||
        rel.has_root_path())
      fail("metadata row at " + where + " names the image \"" + shorten(f[0] + "/" + f[1]) +
           "\", outside the dataset folder " + dir.string() +
           " (images are named relative to it, e.g. imgs/0 sample_0.png); the metadata file is damaged or not "
           "from the LRA release");
    // Col 5, the contour length (an integer; the 128-pixel release writes some fields as floats).
    int contour = -1;
    if (f.size() >= 6) {
      char* end = nullptr;
      const double v = std::strtod(f[5].c_str(), &end);
      if (end != f[5].c_str() && *end == '\0' && v >= 0 && v < 1e6 && v == static_cast<int>(v)) contour = static_cast<int>(v);
    }
    out->push_back({(dir / rel).string(), f[3] == "1" ? 1 : 0, where, contour});
  }
}

std::vector<ImageRef> read_metadata(const std::string& dataset_dir, std::vector<std::string>* ignored) {
  std::vector<ImageRef> rows;
  for (const auto& m : list_metadata(dataset_dir, ignored)) parse_metadata(read_text(m.path), m.path, dataset_dir, &rows);
  return rows;
}

void read_dataset(const std::string& dataset_dir, int resolution, int threads, Split* train, Split* val,
                  Split* test, ReadReport* report) {
  ReadReport rep;
  const std::vector<ImageRef> rows = read_metadata(dataset_dir, &rep.ignored_files);
  rep.rows = static_cast<int64_t>(rows.size());
  for (const auto& r : rows)
    if (rep.contour_lengths[r.contour_length]++ == 0)
      rep.first_row_of_each += (rep.first_row_of_each.empty() ? "" : ", ") + std::to_string(r.contour_length) +
                               " at " + r.where;
  if (rows.empty()) fail("the metadata files in " + (fs::path(dataset_dir) / "metadata").string() + " list no images");

  // Pass 1: sizes (missing and empty files).
  std::vector<uint8_t> empty(rows.size(), 0);
  lra::tasks::parallel_for(rep.rows, threads, [&](int64_t i) {
    std::error_code ec;
    const auto size = fs::file_size(rows[i].path, ec);
    if (ec) {
      std::error_code ec2;  // non-throwing: a name too long for the OS is "cannot read", not a crash
      if (ec == std::errc::no_such_file_or_directory || (!fs::exists(rows[i].path, ec2) && !ec2))
        fail("missing image " + rows[i].path + " (listed at " + rows[i].where +
             "); incomplete download or extraction?");
      fail("cannot read image " + rows[i].path + ": " + ec.message());
    }
    empty[i] = size == 0;
  }, kImagesPerClaim);
  std::vector<int64_t> kept;
  kept.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!empty[i]) {
      kept.push_back(static_cast<int64_t>(i));
    } else if (rep.empty++ == 0) {
      rep.first_empty = rows[i].path;
    }
  }
  const int64_t n = static_cast<int64_t>(kept.size());
  if (n == 0) fail("every image listed in " + dataset_dir + " is an empty file");

  // Pass 2: decode straight into the split buffers.
  const SplitSizes sz = split_sizes(n);
  const int64_t len = static_cast<int64_t>(resolution) * resolution;
  Split* splits[3] = {train, val, test};
  const int64_t counts[3] = {sz.train, sz.val, sz.test};
  for (int s = 0; s < 3; ++s) {
    Split& sp = *splits[s];
    sp = Split{};
    try {
      sp.tokens.assign(static_cast<size_t>(counts[s] * len), 0);
      sp.offsets.resize(static_cast<size_t>(counts[s]) + 1);
      sp.labels.resize(static_cast<size_t>(counts[s]));
    } catch (const std::bad_alloc&) {
      throw Error(ErrorKind::memory, "pathfinder: cannot allocate " + lra::tasks::with_commas(counts[s] * len * 4) +
                                         " bytes for the tokens of " + lra::tasks::with_commas(counts[s]) + " images of " +
                                         std::to_string(resolution) + "x" + std::to_string(resolution) +
                                         "; a full Path-X load needs about 13 GB");
    }
    for (int64_t k = 0; k <= counts[s]; ++k) sp.offsets[k] = k * len;
  }
  lra::tasks::parallel_for(n, threads, [&](int64_t j) {
    const ImageRef& r = rows[kept[j]];
    int s = 0;
    int64_t k = j;
    while (s < 2 && k >= counts[s]) k -= counts[s++];
    const std::vector<uint8_t> bytes = read_bytes(r.path);
    // The header's size is checked before any pixel buffer is allocated (a
    // 40000x40000 header would otherwise allocate 1.6 GB before being refused).
    const lra::tasks::PngSize size = lra::tasks::read_png_size(bytes.data(), bytes.size(), r.path);
    if (size.width != resolution || size.height != resolution)
      fail("image " + r.path + " is " + std::to_string(size.width) + "x" + std::to_string(size.height) +
           ", expected " + std::to_string(resolution) + "x" + std::to_string(resolution) + " (is this a " +
           resolution_folder(resolution) + " folder?)");
    const lra::tasks::GrayImage img =
        lra::tasks::decode_png_gray(bytes.data(), bytes.size(), r.path, {resolution, resolution});
    int32_t* dst = splits[s]->tokens.data() + k * len;
    for (int64_t p = 0; p < len; ++p) dst[p] = img.pixels[static_cast<size_t>(p)];
    splits[s]->labels[static_cast<size_t>(k)] = r.label;
  }, kImagesPerClaim);
  if (report) *report = std::move(rep);
}

bool dataset_present(const std::string& dataset_dir) {
  std::error_code ec;
  return fs::is_directory(fs::path(dataset_dir) / "metadata", ec);
}

std::string resolution_folder(int resolution) { return "pathfinder" + std::to_string(resolution); }

std::vector<std::string> release_candidates(const std::string& root, int resolution, const std::string& difficulty) {
  const fs::path r(root);
  const std::string res = resolution_folder(resolution);
  std::vector<fs::path> dirs;
  if (resolution == 128)
    dirs = {r / "lra_release" / "lra_release" / res, r / "lra_release" / res, r / res};
  else
    dirs = {r / res, r / "lra_release" / res, r / "lra_release" / "lra_release" / res};
  std::vector<std::string> out;
  for (const auto& d : dirs) out.push_back((d / difficulty).string());
  return out;
}

void publish_folder(const std::string& final_dir, const std::function<void(const std::string& staging)>& write) {
  fs::path fin = fs::path(final_dir).lexically_normal();
  if (fin.filename().empty()) fin = fin.parent_path();
  std::error_code ec;
  if (fs::exists(fin, ec)) return;
  static std::atomic<int> counter{0};
  // A killed generation leaves its staging folder: the next one into the same
  // place removes it (and says so) before staging its own.
  lra::tasks::remove_stale_staging(fin.string());
  const fs::path tmp = lra::tasks::staging_folder_name(fin.string(), counter++);
  struct Cleanup {  // removes the staging folder unless it became the final one
    fs::path path;
    ~Cleanup() {
      std::error_code e;
      if (!path.empty()) fs::remove_all(path, e);
    }
  } cleanup{};
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec)
    throw Error(ErrorKind::data, "pathfinder: cannot create folder " + tmp.string() + ": " + ec.message() +
                                     " (choose a writable data folder with --data-dir)");
  cleanup.path = tmp;
  write(tmp.string());
  fs::rename(tmp, fin, ec);
  if (!ec) {
    cleanup.path.clear();
    return;
  }
  if (!fs::is_directory(fin))  // not a lost race with a parallel writer
    throw Error(ErrorKind::data, "pathfinder: cannot rename " + tmp.string() + " to " + fin.string() + ": " + ec.message());
}

}  // namespace lra::pathfinder
