#include "tsv_reader.h"

#include "generator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace lra::listops {
namespace {

constexpr const char* kHint =
    "each line after the header must be '<expression><TAB><digit 0-9>' as in the LRA release "
    "(lra_release/listops-1000/basic_*.tsv) or as written by 'lrahost data generate listops'; "
    "re-download or regenerate the file";

// Character classes of the tokenizer: 0 token text, 1 whitespace, 2 '(', 3 ')'.
struct CharClass {
  unsigned char c[256] = {};
  CharClass() {
    for (unsigned char ws : {' ', '\t', '\n', '\r', '\v', '\f'}) c[ws] = 1;
    c[static_cast<unsigned char>('(')] = 2;
    c[static_cast<unsigned char>(')')] = 3;
  }
};
const CharClass kClass;

int32_t lookup(const char* t, size_t n) {
  if (n == 1) {
    if (t[0] >= '0' && t[0] <= '9') return kDigit0 + (t[0] - '0');
    if (t[0] == 'X') return kClose;
  } else if (n == 3) {
    if (std::memcmp(t, "[SM", 3) == 0) return kSm;
  } else if (n == 4 && std::memcmp(t, "[M", 2) == 0) {
    if (std::memcmp(t + 2, "IN", 2) == 0) return kMin;
    if (std::memcmp(t + 2, "AX", 2) == 0) return kMax;
    if (std::memcmp(t + 2, "ED", 2) == 0) return kMed;
  }
  return kOov;
}

// Tokens as the reference sees them: parentheses are deleted before the
// whitespace split, so they never separate tokens ("(9)" is "9"). Calls
// emit(id, text, len) per token (text holds at most 16 chars of it) and tracks
// parenthesis balance for validation.
struct Parens {
  int64_t depth = 0;
  bool underflow = false;
};
template <class Emit>
void scan(std::string_view src, Parens* parens, Emit&& emit) {
  const char* p = src.data();
  const char* const end = p + src.size();
  while (p < end) {
    const char c = *p;
    switch (kClass.c[static_cast<unsigned char>(c)]) {
      case 1: ++p; continue;
      case 2: ++parens->depth; ++p; continue;
      case 3:
        if (--parens->depth < 0) parens->underflow = true;
        ++p;
        continue;
      default: break;
    }
    // Fast path: a one-character token followed by whitespace or the end.
    if (p + 1 == end || kClass.c[static_cast<unsigned char>(p[1])] == 1) {
      const int32_t id = c >= '0' && c <= '9' ? kDigit0 + (c - '0') : (c == ']' || c == 'X') ? kClose : kOov;
      const char x = c == ']' ? 'X' : c;
      emit(id, &x, 1);
      ++p;
      continue;
    }
    char tok[16];
    size_t len = 0;
    for (; p < end; ++p) {
      const unsigned char k = kClass.c[static_cast<unsigned char>(*p)];
      if (k == 1) break;
      if (k == 2) {
        ++parens->depth;
      } else if (k == 3) {
        if (--parens->depth < 0) parens->underflow = true;
      } else {
        if (len < sizeof tok) tok[len] = *p == ']' ? 'X' : *p;
        ++len;
      }
    }
    emit(lookup(tok, len), tok, len);
  }
}

// Buffered line reader: lines without the '\n' and a trailing '\r' (the
// reference's csv writer ends rows with "\r\n").
class LineReader {
 public:
  // `size_hint`: the file's size when known; the buffer is 4 MiB or that, when
  // smaller (it grows for longer lines anyway), so a small file does not zero 4 MiB.
  LineReader(FILE* f, std::string path, long size_hint)
      : f_(f), path_(std::move(path)),
        buf_(size_hint > 0 ? std::clamp<size_t>(static_cast<size_t>(size_hint) + 1, 4096, 1u << 22) : 1u << 22) {}
  bool next(std::string_view* line, bool* had_newline) {
    size_t scanned = begin_;
    for (;;) {
      if (const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned)) {
        const size_t pos = static_cast<const char*>(nl) - buf_.data();
        *line = view(begin_, pos);
        *had_newline = true;
        begin_ = pos + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        *line = view(begin_, end_);
        *had_newline = false;
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
      const size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, f_);
      if (n == 0) {
        if (std::ferror(f_)) throw Error(ErrorKind::data, "cannot read " + path_ + ": " + std::strerror(errno));
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
  FILE* f_;
  std::string path_;
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

}  // namespace

std::vector<int32_t> tokenize(std::string_view source) {
  std::vector<int32_t> ids;
  Parens parens;
  scan(source, &parens, [&](int32_t id, const char*, size_t) { ids.push_back(id); });
  return ids;
}

Split read_tsv(const std::string& path, ReadReport* report) {
  ReadReport local;
  ReadReport& rep = report ? *report : local;
  rep = ReadReport{};
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(ErrorKind::data, "cannot open " + path + ": " + std::strerror(errno));
  Split split;
  long size = -1;
  if (std::fseek(file.get(), 0, SEEK_END) == 0) {
    size = std::ftell(file.get());
    if (size > 0) split.tokens.reserve(static_cast<size_t>(size) / 5);  // ~6 bytes per token in the release
    std::rewind(file.get());
  }

  LineReader reader(file.get(), path, size);
  std::string_view line;
  bool had_newline = true;
  int64_t lineno = 0;
  auto fail = [&](const std::string& what) {
    std::string msg = path + ":" + std::to_string(lineno) + ": " + what;
    if (!had_newline) msg += " (the file ends inside this line: truncated download or interrupted write?)";
    throw Error(ErrorKind::data, msg + "; " + kHint);
  };

  if (!reader.next(&line, &had_newline)) {
    lineno = 1;
    fail("empty file, expected the header 'Source<TAB>Target'");
  }
  lineno = 1;
  if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  if (line != "Source\tTarget") fail("expected the header 'Source<TAB>Target', found " + quote(line));

  Evaluator ev;
  while (reader.next(&line, &had_newline)) {
    ++lineno;
    if (line.empty()) fail("empty line");
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos || line.find('\t', tab + 1) != std::string_view::npos) {
      size_t tabs = 0;
      for (char c : line) tabs += c == '\t';
      fail("expected 2 tab-separated columns (Source, Target), found " + std::to_string(tabs + 1));
    }
    std::string_view target = line.substr(tab + 1);
    while (!target.empty() && target.front() == ' ') target.remove_prefix(1);
    while (!target.empty() && target.back() == ' ') target.remove_suffix(1);
    if (target.size() != 1 || target[0] < '0' || target[0] > '9')
      fail("Target " + quote(target) + " is not an integer 0-9");

    const size_t start = split.tokens.size();
    int64_t oov = 0;
    Parens parens;
    ev.reset();
    bool well_formed = true;
    scan(line.substr(0, tab), &parens, [&](int32_t id, const char* text, size_t len) {
      split.tokens.push_back(id);
      if (id == kOov) {
        if (++oov == 1 && rep.oov_examples == 0)
          rep.first_oov = path + ":" + std::to_string(lineno) + ": " +
                          quote(std::string_view(text, std::min(len, size_t{16})));
      }
      if (well_formed) well_formed = ev.push(id);
    });
    const size_t ntok = split.tokens.size() - start;
    if (ntok == 0) fail("empty Source expression");
    if (parens.underflow) fail("unbalanced parentheses in Source (a ')' without its '(')");
    if (parens.depth != 0) fail("unbalanced parentheses in Source (" + std::to_string(parens.depth) + " '(' not closed)");
    int value = -1;
    if (!well_formed || !ev.finish(&value)) fail("ill-formed Source expression: " + ev.error());

    const GeneratorParams lra;  // LRA's bounds
    std::string outside;
    if (static_cast<int64_t>(ntok) <= lra.min_length || static_cast<int64_t>(ntok) >= lra.max_length)
      outside = "length " + std::to_string(ntok) + " tokens, outside (" + std::to_string(lra.min_length) + ", " +
                std::to_string(lra.max_length) + ")";
    else if (ev.depth() > lra.max_depth)
      outside = "depth " + std::to_string(ev.depth()) + " > " + std::to_string(lra.max_depth);
    else if (ev.most_operands() > lra.max_args || (ev.fewest_operands() > 0 && ev.fewest_operands() < 2))
      outside = "an operator with " +
                std::to_string(ev.most_operands() > lra.max_args ? ev.most_operands() : ev.fewest_operands()) +
                " operands, outside 2.." + std::to_string(lra.max_args);
    if (!outside.empty() && rep.outside_lra_bounds++ == 0)
      rep.first_outside_lra_bounds = path + ":" + std::to_string(lineno) + ": " + outside;

    const int label = target[0] - '0';
    if (value >= 0 && value != label && rep.label_mismatches++ == 0)
      rep.first_mismatch = path + ":" + std::to_string(lineno);
    rep.oov_tokens += oov;
    rep.oov_examples += oov > 0;
    rep.max_tokens = std::max<int64_t>(rep.max_tokens, static_cast<int64_t>(ntok));
    split.offsets.push_back(static_cast<int64_t>(split.tokens.size()));
    split.labels.push_back(label);
  }
  rep.examples = static_cast<int64_t>(split.labels.size());
  return split;
}

}  // namespace lra::listops
