// Harness: an IMDb release folder as the text task reads it (load_imdb:
// aclImdb/{train,test}/{neg,pos}/<id>_<rating>.txt, file names ordered by
// their numeric id, each review's bytes).
//
// Input format (so the fuzzer shapes both names and contents): records
// separated by '\n'; a record's first byte picks the folder (value % 4:
// train/neg, train/pos, test/neg, test/pos), the bytes up to the first '\t'
// are the file name ('/' and NUL dropped), the rest is the file's content.
// At most 16 files per input.
#include <vector>

#include "fuzz_util.h"
#include "imdb_reader.h"

namespace {

const char* const kFolders[4] = {"train/neg", "train/pos", "test/neg", "test/pos"};

const lra_fuzz::fs::path& root() {
  static const lra_fuzz::fs::path r = [] {
    const auto p = lra_fuzz::scratch() / "imdb";
    for (const char* f : kFolders) lra_fuzz::fs::create_directories(p / "aclImdb" / f);
    return p;
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = lra_fuzz::fs;
  const fs::path& r = root();
  for (const char* f : kFolders)
    for (const auto& e : fs::directory_iterator(r / "aclImdb" / f)) fs::remove_all(e.path());

  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  int files = 0;
  while (start < text.size() && files < 16) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string record = text.substr(start, end - start);
    start = end + 1;
    if (record.empty()) continue;
    const char* folder = kFolders[static_cast<unsigned char>(record[0]) % 4];
    const size_t tab = record.find('\t', 1);
    std::string name;
    for (char c : record.substr(1, tab == std::string::npos ? std::string::npos : tab - 1))
      if (c != '/' && c != '\0' && name.size() < 100) name += c;
    if (name.empty() || name == "." || name == "..") continue;
    const std::string content = tab == std::string::npos ? "" : record.substr(tab + 1);
    lra_fuzz::write_file(r / "aclImdb" / folder / name, content);
    ++files;
  }
  LRA_FUZZ_EXPECT_ERRORS({
    lra::text::LoadOptions o;
    o.max_length = 64;
    (void)lra::text::load_imdb(r, o);
    o.train_examples = 2;
    o.eval_examples = 1;
    o.seed = 3;
    (void)lra::text::load_imdb(r, o);
  })
  return 0;
}
