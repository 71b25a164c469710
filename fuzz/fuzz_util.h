// fuzz/fuzz_util.h — shared by the harnesses: a private scratch folder (on
// /dev/shm when there is one, so per-input files cost little), writing bytes
// to a file, and the rule for what a parser may throw.
//
// A parser fed hostile bytes may end only with the errors the host documents
// for bad input: lra::Error of any kind except `internal` (a bug by its own
// definition). Anything else escapes LLVMFuzzerTestOneInput: libFuzzer reports
// it as a crash (uncaught exception -> abort), the replay driver as a failure.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "lra/status.h"

namespace lra_fuzz {

namespace fs = std::filesystem;

// A folder of this process's own, removed at exit.
inline const fs::path& scratch() {
  static const fs::path dir = [] {
    std::error_code ec;
    fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("lra-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(d, ec);
    fs::create_directories(d);
    static struct Cleanup {
      fs::path p;
      ~Cleanup() {
        std::error_code e;
        fs::remove_all(p, e);
      }
    } cleanup{d};
    return d;
  }();
  return dir;
}

inline void write_file(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline void write_file(const fs::path& path, std::string_view bytes) {
  write_file(path, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// An lra::Error is the documented answer to bad input, unless it calls itself internal.
inline void expected(const lra::Error& e) {
  if (e.kind() == lra::ErrorKind::internal) {
    std::fprintf(stderr, "fuzz: internal error from a parser (a bug): %s\n", e.what());
    std::abort();
  }
}

}  // namespace lra_fuzz

// Runs the statements; an lra::Error other than internal ends the input quietly.
#define LRA_FUZZ_EXPECT_ERRORS(...)     \
  try {                                 \
    __VA_ARGS__                         \
  } catch (const lra::Error& e) {       \
    lra_fuzz::expected(e);              \
  }
