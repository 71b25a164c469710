// A tar written entry by entry with libarchive, for the archives `lrahost
// submit` would never write: other entry types and names, headers that state
// their own sizes, gzip bombs. Header-only (the tests that include it link
// libarchive through the host's bundle library).
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

namespace lra::test {

struct RawTar {
  archive* a;
  explicit RawTar(const std::filesystem::path& file, bool gzip = false) : a(archive_write_new()) {
    archive_write_set_format_pax_restricted(a);
    if (gzip) archive_write_add_filter_gzip(a);
    archive_write_open_filename(a, file.c_str());
  }
  // An entry of `type` (a symbolic link to `link` when given) holding `bytes`.
  void add(const std::string& name, const std::string& bytes, unsigned type = AE_IFREG, const char* link = nullptr) {
    archive_entry* e = entry(name, type, type == AE_IFREG ? static_cast<la_int64_t>(bytes.size()) : 0);
    if (link) archive_entry_set_symlink(e, link);
    archive_write_header(a, e);
    if (type == AE_IFREG) archive_write_data(a, bytes.data(), bytes.size());
    archive_entry_free(e);
  }
  // A regular file of `zeros` zero bytes, written a megabyte at a time (a bomb's payload).
  void add_zeros(const std::string& name, int64_t zeros) {
    archive_entry* e = entry(name, AE_IFREG, zeros);
    archive_write_header(a, e);
    const std::string block(1 << 20, '\0');
    for (int64_t left = zeros; left > 0; left -= static_cast<int64_t>(block.size()))
      archive_write_data(a, block.data(), static_cast<size_t>(std::min<int64_t>(left, block.size())));
    archive_entry_free(e);
  }
  ~RawTar() {
    archive_write_close(a);
    archive_write_free(a);
  }

 private:
  static archive_entry* entry(const std::string& name, unsigned type, la_int64_t size) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, size);
    return e;
  }
};

}  // namespace lra::test
