// fuzz/replay_main.cpp — the ordinary (gcc) build's stand-in for libFuzzer:
// feeds every file under the given folders (or the given files) to the
// harness's LLVMFuzzerTestOneInput once, so ctest replays the seed corpora and
// every crash input kept there. Exits 1 naming the file on anything escaping.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no input files (usage: %s CORPUS_DIR_OR_FILE...)\n", argv[0]);
    return 2;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "replay: %s: uncaught exception: %s\n", f.c_str(), e.what());
      return 1;
    } catch (...) {
      std::fprintf(stderr, "replay: %s: uncaught exception\n", f.c_str());
      return 1;
    }
  }
  std::printf("replay: %zu input(s), no crash\n", files.size());
  return 0;
}
