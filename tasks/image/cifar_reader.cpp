#include "cifar_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "task_util.h"

namespace lra::image {

using tasks::choose_subset;
using tasks::parallel_for;
using tasks::with_commas;

namespace {

namespace fs = std::filesystem;

// Where each record of a file goes: split (nullptr = not kept) and slot.
struct Dest {
  Split* split = nullptr;
  int64_t slot = 0;
};

void prepare(Split* s, int64_t n) {
  try {
    s->tokens.assign(static_cast<size_t>(n * kPixels), 0);
    s->labels.assign(static_cast<size_t>(n), 0);
    s->offsets.resize(static_cast<size_t>(n) + 1);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::memory, "image: cannot allocate " + with_commas(n * kPixels * 4) + " bytes for " +
                                       with_commas(n) + " images of " + std::to_string(kPixels) + " tokens");
  }
  for (int64_t i = 0; i <= n; ++i) s->offsets[i] = i * kPixels;
}

void read_file(const std::string& path, int64_t records, const std::vector<Dest>& dest) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error(ErrorKind::data, "image: cannot open " + path + ": " + std::strerror(errno) + "; " + kDownloadHint);
  // Up to 1024 records at a time (no more than the file holds: a small file does not zero 3 MB).
  std::vector<unsigned char> buf(static_cast<size_t>(kRecordBytes * std::min<int64_t>(1024, records)));
  int64_t r = 0;
  while (r < records) {
    const int64_t batch = std::min<int64_t>(1024, records - r);
    const size_t want = static_cast<size_t>(batch * kRecordBytes);
    if (std::fread(buf.data(), 1, want, f.get()) != want)
      throw Error(ErrorKind::data, "image: cannot read " + path + " (record " + std::to_string(r) +
                                       "): " + (std::ferror(f.get()) ? std::strerror(errno) : "the file shrank") +
                                       "; " + kDownloadHint);
    for (int64_t k = 0; k < batch; ++k, ++r) {
      const unsigned char* rec = buf.data() + k * kRecordBytes;
      if (rec[0] > 9)
        throw Error(ErrorKind::data, "image: " + path + ": record " + std::to_string(r) + " (byte offset " +
                                         std::to_string(r * kRecordBytes) + ") has label byte " +
                                         std::to_string(rec[0]) +
                                         ", expected 0-9 (each record is 1 label byte + 3072 pixel bytes); the file is "
                                         "damaged or not a CIFAR-10 batch (CIFAR-100 has 2 label bytes): " +
                                         kDownloadHint);
      const Dest& d = dest[static_cast<size_t>(r)];
      if (!d.split) continue;
      d.split->labels[static_cast<size_t>(d.slot)] = rec[0];
      int32_t* out = d.split->tokens.data() + d.slot * kPixels;
      const unsigned char* red = rec + 1;
      const unsigned char* green = red + kPixels;
      const unsigned char* blue = green + kPixels;
      for (int64_t p = 0; p < kPixels; ++p) out[p] = to_gray(red[p], green[p], blue[p]);
    }
  }
}

}  // namespace

std::vector<std::string> file_names() {
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
          "test_batch.bin"};
}

uint8_t to_gray(uint8_t r, uint8_t g, uint8_t b) {
  // Built with -ffp-contract=off: every product and sum is rounded to float32,
  // as TensorFlow's float32 ops do.
  const float scale = static_cast<float>(1.0 / 255.0);
  const float fr = static_cast<float>(r) * scale;
  const float fg = static_cast<float>(g) * scale;
  const float fb = static_cast<float>(b) * scale;
  float y = 0.2989f * fr;
  y = y + 0.5870f * fg;
  y = y + 0.1140f * fb;
  const float scaled = y * 255.5f;
  if (!(scaled > 0.0f)) return 0;
  if (scaled >= 255.0f) return 255;
  return static_cast<uint8_t>(scaled);  // truncation, as tf.cast
}

fs::path find_cifar_dir(const fs::path& root) {
  const fs::path candidates[2] = {root / "cifar-10-batches-bin", root};
  for (const fs::path& dir : candidates) {
    std::string missing;
    bool any = false;
    for (const std::string& name : file_names()) {
      std::error_code ec;
      if (fs::is_regular_file(dir / name, ec))
        any = true;
      else
        missing += (missing.empty() ? "" : ", ") + (dir / name).string();
    }
    if (!any) continue;
    if (!missing.empty())
      throw Error(ErrorKind::data,
                  "image: incomplete CIFAR-10 folder " + dir.string() + ", missing " + missing + "; " + kDownloadHint);
    return dir;
  }
  throw Error(ErrorKind::data, "image: CIFAR-10 not found. Looked for data_batch_1.bin .. data_batch_5.bin and "
                               "test_batch.bin in " + candidates[0].string() + " and " + candidates[1].string() +
                                   "; " + kDownloadHint);
}

int64_t record_count(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorKind::data, "image: cannot read the size of " + path + ": " + ec.message());
  if (size == 0 || size % static_cast<uintmax_t>(kRecordBytes) != 0)
    throw Error(ErrorKind::data, "image: " + path + " has " + std::to_string(size) +
                                     " bytes, not a positive multiple of the 3073-byte record (1 label byte + 3072 "
                                     "pixel bytes; a full batch is 30,730,000 bytes): truncated download?; " +
                                     kDownloadHint);
  // A batch file holds at most one full batch (10,000 records, 30,730,000
  // bytes); anything larger is refused on its size, before a buffer for its
  // records is allocated (a 9 GB file would otherwise ask for tens of GB).
  const uintmax_t full = static_cast<uintmax_t>(kRecordsPerBatch) * static_cast<uintmax_t>(kRecordBytes);
  if (size > full)
    throw Error(ErrorKind::data, "image: " + path + " has " + std::to_string(size) + " bytes, more than a CIFAR-10 "
                                     "batch file holds (" + with_commas(kRecordsPerBatch) + " records of 3073 bytes = " +
                                     with_commas(static_cast<int64_t>(full)) + " bytes): not a CIFAR-10 batch; " +
                                     kDownloadHint);
  return static_cast<int64_t>(size / static_cast<uintmax_t>(kRecordBytes));
}

Dataset load_cifar(const fs::path& root, const LoadOptions& o) {
  const fs::path dir = find_cifar_dir(root);
  const std::vector<std::string> names = file_names();
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  for (const auto& n : names) {
    paths.push_back((dir / n).string());
    counts.push_back(record_count(paths.back()));
  }
  int64_t pool = 0;
  for (int f = 0; f < 5; ++f) pool += counts[f];
  const int64_t test_all = counts[5];
  const int64_t train_all = pool * 9 / 10;  // floor(90%)
  const int64_t val_all = pool - train_all;
  if (train_all == 0)
    throw Error(ErrorKind::data, "image: data_batch_1..5.bin in " + dir.string() + " hold " + std::to_string(pool) +
                                     " record(s), too few for a 90/10 train/validation split; " + kDownloadHint);

  Dataset d;
  d.info.vocab_size = kVocabSize;
  d.info.num_classes = kNumClasses;
  d.info.natural_len = kPixels;
  d.info.paired = false;

  // Decide every record's destination before reading, then decode in parallel.
  std::vector<std::vector<Dest>> dest(6);
  for (int f = 0; f < 6; ++f) dest[f].resize(static_cast<size_t>(counts[f]));
  auto assign = [&](Split* split, int64_t first, int64_t n, int64_t cap, int file_lo, int file_hi) {
    const std::vector<int64_t> keep = choose_subset(n, cap, o.seed);
    prepare(split, static_cast<int64_t>(keep.size()));
    int64_t slot = 0;
    for (int64_t k : keep) {
      int64_t g = first + k;  // index over the files file_lo..file_hi, in order
      int f = file_lo;
      while (f < file_hi && g >= counts[f]) g -= counts[f++];
      dest[f][static_cast<size_t>(g)] = {split, slot++};
    }
    return static_cast<int64_t>(keep.size());
  };
  const int64_t ntrain = assign(&d.train, 0, train_all, o.train_examples, 0, 4);
  const int64_t nval = assign(&d.val, train_all, val_all, o.eval_examples, 0, 4);
  const int64_t ntest = assign(&d.test, 0, test_all, o.eval_examples, 5, 5);
  parallel_for(6, o.threads, [&](int64_t f) { read_file(paths[f], counts[f], dest[f]); });

  d.source = "CIFAR-10 binary release at " + dir.string() + ": train " + with_commas(ntrain) +
             " = the first 90% of data_batch_1..5 in file order, validation " + with_commas(nval) +
             " = the last 10%, test " + with_commas(ntest) +
             " from test_batch.bin; grayscale as LRA (tf.image.rgb_to_grayscale on uint8), 1024 pixels row-major, "
             "token = gray value (0 = black; the lra-v1 manifests mask it as LRA did, model.padding_mask). LRA takes TFDS's train[90%:] as validation, and TFDS's "
             "example order differs from the binary files, so the validation images differ from LRA's (the test "
             "set is the same)";
  std::string partial;
  if (pool != kFullTrain) partial += with_commas(pool) + " of " + with_commas(kFullTrain) + " training records";
  if (test_all != kFullTest)
    partial += (partial.empty() ? "" : ", ") + with_commas(test_all) + " of " + with_commas(kFullTest) +
               " test records";
  if (!partial.empty()) d.source += "; NOT the full dataset: the files hold " + partial;
  std::string subset;
  if (ntrain < train_all) subset += with_commas(ntrain) + " of " + with_commas(train_all) + " training images";
  if (nval < val_all)
    subset += (subset.empty() ? "" : ", ") + with_commas(nval) + " of " + with_commas(val_all) + " validation images";
  if (ntest < test_all)
    subset += (subset.empty() ? "" : ", ") + with_commas(ntest) + " of " + with_commas(test_all) + " test images";
  if (!subset.empty()) d.source += "; subset (seed " + std::to_string(o.seed) + "): " + subset;
  return d;
}

}  // namespace lra::image
