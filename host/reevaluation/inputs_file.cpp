#include "reevaluation/inputs_file.h"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "common/atomic_file.h"
#include "lra/status.h"

namespace lra::host {
namespace {

constexpr char kMagic[8] = {'L', 'R', 'A', 'I', 'N', 'P', 'T', '1'};

template <class T>
void put(std::string& out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

void write_inputs_file(const std::filesystem::path& file, const lra::Split& split) {
  std::string out(kMagic, sizeof kMagic);
  put(out, split.offsets);
  put(out, split.tokens);
  put(out, split.offsets2);
  put(out, split.tokens2);
  write_file_atomic(file, out);
}

lra::Split read_inputs_file(const std::filesystem::path& file) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::data, "inputs file " + file.string() + ": " + what);
  };
  std::ifstream in(file, std::ios::binary);
  if (!in) throw bad("cannot be read");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) throw bad("not an lrahost inputs file");
  uint64_t left = size - 8;
  auto get = [&](auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    uint64_t n = 0;
    if (left < sizeof n || !in.read(reinterpret_cast<char*>(&n), sizeof n)) throw bad("truncated");
    left -= sizeof n;
    if (n > left / sizeof(T)) throw bad("a length runs past the end of the file");
    v.resize(n);
    if (!in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T)))) throw bad("truncated");
    left -= n * sizeof(T);
  };
  lra::Split s;
  get(s.offsets);
  get(s.tokens);
  get(s.offsets2);
  get(s.tokens2);
  auto check = [&](const std::vector<int64_t>& off, size_t tokens, const char* which) {
    if (off.empty() || off.front() != 0 || static_cast<uint64_t>(off.back()) != tokens)
      throw bad(std::string(which) + " offsets do not span the tokens");
    for (size_t i = 1; i < off.size(); ++i)
      if (off[i] < off[i - 1]) throw bad(std::string(which) + " offsets decrease");
  };
  check(s.offsets, s.tokens.size(), "first-input");
  if (s.offsets2.empty()) s.offsets2 = {0};
  if (s.offsets2.size() > 1) {
    check(s.offsets2, s.tokens2.size(), "second-input");
    if (s.offsets2.size() != s.offsets.size()) throw bad("the two inputs hold different numbers of examples");
  }
  s.labels.assign(s.offsets.size() - 1, 0);
  return s;
}

void append_split(lra::Split& to, const lra::Split& from) {
  const int64_t base = to.offsets.back(), base2 = to.offsets2.back();
  to.tokens.insert(to.tokens.end(), from.tokens.begin(), from.tokens.end());
  for (size_t i = 1; i < from.offsets.size(); ++i) to.offsets.push_back(base + from.offsets[i]);
  to.tokens2.insert(to.tokens2.end(), from.tokens2.begin(), from.tokens2.end());
  for (size_t i = 1; i < from.offsets2.size(); ++i) to.offsets2.push_back(base2 + from.offsets2[i]);
  to.labels.insert(to.labels.end(), from.labels.begin(), from.labels.end());
}

}  // namespace lra::host
