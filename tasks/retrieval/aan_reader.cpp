#include "aan_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "task_util.h"

namespace lra::retrieval {

using tasks::choose_subset;
using tasks::with_commas;

namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat =
    "each line must be 'label<TAB>id1<TAB>id2<TAB>text1<TAB>text2' with label 0 or 1, no header and no quoting, as "
    "in lra_release/lra_release/tsv_data";

// Buffered line reader: yields lines without '\n' and without a trailing '\r'.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb"), &std::fclose) {
    if (!file_)
      throw Error(ErrorKind::data, "retrieval: cannot open " + path + ": " + std::strerror(errno) + "; " + kDownloadHint);
    // 4 MiB, or the file's size when smaller (the buffer grows for longer lines
    // anyway): reading a small file does not zero 4 MiB.
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    buf_.resize(ec ? size_t{1} << 22 : static_cast<size_t>(std::clamp<std::uintmax_t>(size + 1, 4096, 1u << 22)));
  }
  // False at the end of the file. *complete: the line ended with '\n'.
  bool next(std::string_view* line, bool* complete) {
    size_t scanned = begin_;
    for (;;) {
      if (const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned)) {
        const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
        *line = view(begin_, pos);
        *complete = true;
        begin_ = pos + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        *line = view(begin_, end_);
        *complete = false;
        begin_ = end_;
        return true;
      }
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
      scanned = end_;
      const size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_.get());
      if (n == 0) {
        if (std::ferror(file_.get()))
          throw Error(ErrorKind::data, "retrieval: cannot read " + path_ + ": " + std::strerror(errno));
        eof_ = true;
      }
      end_ += n;
    }
  }

 private:
  std::string_view view(size_t b, size_t e) const {
    if (e > b && buf_[e - 1] == '\r') --e;
    return {buf_.data() + b, e - b};
  }
  std::string path_;
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
};

std::string quote(std::string_view s) {
  std::string q = "'" + std::string(s.substr(0, 40)) + (s.size() > 40 ? "...'" : "'");
  for (auto& c : q)
    if (c == '\t') c = ' ';
  return q;
}

// The label column as LRA reads it (a float cast to int32), restricted to 0 and 1.
bool parse_label(std::string_view field, int32_t* out) {
  while (!field.empty() && (field.front() == ' ')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ')) field.remove_suffix(1);
  if (field.empty() || field.size() > 32) return false;
  const std::string s(field);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v)) return false;
  if (v != 0.0 && v != 1.0) return false;
  *out = v == 1.0 ? 1 : 0;
  return true;
}

void append_doc(std::string_view text, int64_t keep, std::vector<int32_t>* tokens, std::vector<int64_t>* offsets,
                ReadReport* rep) {
  const size_t n = std::min(text.size(), static_cast<size_t>(keep));
  for (size_t i = 0; i < n; ++i) tokens->push_back(static_cast<int32_t>(static_cast<unsigned char>(text[i])) + 1);
  offsets->push_back(static_cast<int64_t>(tokens->size()));
  rep->empty_docs += text.empty();
  rep->cut_docs += text.size() > n;
}

}  // namespace

std::string file_name(const char* split) { return std::string("new_aan_pairs.") + split + ".tsv"; }

fs::path find_aan_dir(const fs::path& root) {
  const fs::path candidates[4] = {root, root / "tsv_data", root / "lra_release" / "tsv_data",
                                  root / "lra_release" / "lra_release" / "tsv_data"};
  for (const fs::path& dir : candidates) {
    std::string missing;
    bool any = false;
    for (const char* split : kSplitNames) {
      std::error_code ec;
      if (fs::is_regular_file(dir / file_name(split), ec))
        any = true;
      else
        missing += (missing.empty() ? "" : ", ") + (dir / file_name(split)).string();
    }
    if (!any) continue;
    if (!missing.empty())
      throw Error(ErrorKind::data, "retrieval: incomplete AAN folder " + dir.string() + ", missing " + missing + "; " +
                                       kDownloadHint);
    return dir;
  }
  std::string looked;
  for (const fs::path& dir : candidates) looked += (looked.empty() ? "" : ", ") + dir.string();
  throw Error(ErrorKind::data, "retrieval: AAN pairs not found. Looked for new_aan_pairs.{train,eval,test}.tsv in " +
                                   looked + "; " + kDownloadHint);
}

Split read_aan_tsv(const std::string& path, int64_t max_length, int64_t cap, uint64_t seed, ReadReport* report) {
  ReadReport local;
  ReadReport& rep = report ? *report : local;
  rep = ReadReport{};
  const int64_t keep = std::max<int64_t>(0, std::min(kDocBytes, max_length));
  std::string_view line;
  bool complete = true;

  // With a cap, a first pass counts the records so the subset can be drawn.
  std::vector<char> chosen;
  if (cap > 0) {
    LineReader counter(path);
    int64_t rows = 0;
    while (counter.next(&line, &complete)) rows += !line.empty();
    if (cap < rows) {
      chosen.assign(static_cast<size_t>(rows), 0);
      for (int64_t i : choose_subset(rows, cap, seed)) chosen[i] = 1;
    }
  }

  Split split;
  LineReader reader(path);
  int64_t lineno = 0;
  auto fail = [&](const std::string& what) {
    std::string msg = "retrieval: " + path + ":" + std::to_string(lineno) + ": " + what;
    if (!complete) msg += " (the file ends inside this line: truncated download or interrupted write?)";
    throw Error(ErrorKind::data, msg + "; " + kFormat + ". Re-download the file or repair the line");
  };
  while (reader.next(&line, &complete)) {
    ++lineno;
    if (line.empty()) continue;
    std::string_view field[5];
    size_t columns = 1, start = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] != '\t') continue;
      if (columns <= 4) field[columns - 1] = line.substr(start, i - start);
      ++columns;
      start = i + 1;
    }
    if (columns != 5)
      fail("expected 5 tab-separated columns (label, id1, id2, text1, text2), found " + std::to_string(columns));
    field[4] = line.substr(start);
    // Every row of the LRA files ends with a newline: a last row without one
    // was cut, possibly inside text2, which would otherwise be read as a
    // shorter document.
    if (!complete) fail("the last row has no line end, so its last column (text2) may be cut short");
    int32_t label = 0;
    if (!parse_label(field[0], &label)) fail("label " + quote(field[0]) + " is not 0 or 1 (e.g. 1, 0, 1.0, 0.0)");
    const int64_t row = rep.rows++;
    if (!chosen.empty() && !chosen[static_cast<size_t>(row)]) continue;
    append_doc(field[3], keep, &split.tokens, &split.offsets, &rep);
    append_doc(field[4], keep, &split.tokens2, &split.offsets2, &rep);
    split.labels.push_back(label);
    rep.positives += label;
  }
  if (!chosen.empty() && static_cast<int64_t>(chosen.size()) != rep.rows)
    throw Error(ErrorKind::data, "retrieval: " + path + " changed while it was read (" + with_commas(rep.rows) +
                                     " records now, " + with_commas(static_cast<int64_t>(chosen.size())) +
                                     " before); read it again when nothing writes to it");
  if (rep.rows == 0)
    throw Error(ErrorKind::data, "retrieval: " + path + " holds no records; " + kFormat + ". " + kDownloadHint);
  rep.kept = static_cast<int64_t>(split.labels.size());
  return split;
}

Dataset load_aan(const fs::path& root, const LoadOptions& o) {
  const fs::path dir = find_aan_dir(root);
  Dataset d;
  d.info.vocab_size = kVocabSize;
  d.info.num_classes = kNumClasses;
  d.info.natural_len = o.max_length;
  d.info.paired = true;
  d.info.vocabulary.reserve(kVocabSize);
  d.info.vocabulary.emplace_back("<pad>");
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    if (b >= 0x21 && b <= 0x7e)
      d.info.vocabulary.emplace_back(1, static_cast<char>(b));
    else {
      std::snprintf(buf, sizeof buf, "\\x%02X", b);
      d.info.vocabulary.emplace_back(buf);
    }
  }

  Split* splits[3] = {&d.train, &d.val, &d.test};
  const char* names[3] = {"train", "validation", "test"};
  std::string counts, subset;
  int64_t empty = 0, cut = 0;
  for (int s = 0; s < 3; ++s) {
    ReadReport rep;
    *splits[s] = read_aan_tsv((dir / file_name(kSplitNames[s])).string(), o.max_length,
                              s == 0 ? o.train_examples : o.eval_examples, o.seed, &rep);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", rep.kept ? 100.0 * rep.positives / rep.kept : 0.0);
    counts += std::string(s ? ", " : "") + names[s] + " " + with_commas(rep.kept) + " pairs (" + pct +
              "% linked) from " + file_name(kSplitNames[s]);
    if (rep.kept < rep.rows)
      subset += std::string(subset.empty() ? "" : ", ") + with_commas(rep.kept) + " of " + with_commas(rep.rows) +
                " " + names[s] + " pairs";
    empty += rep.empty_docs;
    cut += rep.cut_docs;
  }
  d.source = "AAN citation pairs (LRA release) at " + dir.string() + ": " + counts +
             " (LRA does not document the split sizes); each document: the ids (byte + 1) of its first " +
             with_commas(std::min(kDocBytes, o.max_length)) + " bytes";
  if (cut) d.source += ", " + with_commas(cut) + " documents truncated";
  if (empty) d.source += "; " + with_commas(empty) + " empty documents (kept as empty inputs)";
  if (!subset.empty()) d.source += "; subset (seed " + std::to_string(o.seed) + "): " + subset;
  return d;
}

}  // namespace lra::retrieval
