// write_bundle (reevaluation/bundle.h): `lrahost submit`'s side of the bundle,
// one tar file written beside its name and moved there once it is durable.
#include "reevaluation/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ArchiveFree {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};

}  // namespace

void write_bundle(const fs::path& out, const json& index, const std::vector<BundleFile>& files) {
  std::error_code ec;
  if (fs::exists(out, ec))
    throw Error(ErrorKind::usage, "bundle " + out.string() + " already exists; choose another --out or remove it");
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::usage, "cannot write bundle " + out.string() + ": folder " + dir.string() + " does not exist");
  const fs::path tmp = dir / ("." + out.filename().string() + ".tmp-" + std::to_string(getpid()));
  auto fail = [&](const std::string& what) {
    fs::remove(tmp, ec);
    throw Error(ErrorKind::storage, "cannot write bundle " + out.string() + ": " + what +
                                        "; free space or choose another --out");
  };
  std::unique_ptr<archive, ArchiveFree> a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), tmp.c_str()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
  auto add = [&](const std::string& name, const std::string* bytes, const fs::path* source) {
    std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    const int64_t size = bytes ? static_cast<int64_t>(bytes->size()) : static_cast<int64_t>(fs::file_size(*source));
    archive_entry_set_size(e.get(), size);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
    if (bytes) {
      if (archive_write_data(a.get(), bytes->data(), bytes->size()) < 0) fail(archive_error_string(a.get()));
    } else {
      std::ifstream in(*source, std::ios::binary);
      if (!in) throw Error(ErrorKind::usage, "cannot read " + source->string() + ": " + std::strerror(errno));
      std::vector<char> buf(1 << 20);
      int64_t written = 0;
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto got = in.gcount();
        if (got <= 0) break;
        if (archive_write_data(a.get(), buf.data(), static_cast<size_t>(got)) < 0) fail(archive_error_string(a.get()));
        written += got;
      }
      if (written != size) fail(source->string() + " changed while it was packed");
    }
  };
  const std::string index_text = index.dump(2) + "\n";
  add(kBundleIndexName, &index_text, nullptr);
  for (const auto& f : files) add(f.name, nullptr, &f.source);
  if (archive_write_close(a.get()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
  a.reset();
  // Make the bytes durable before the name appears.
  if (FILE* fp = std::fopen(tmp.c_str(), "rb")) {
    const int rc = fsync(fileno(fp));
    std::fclose(fp);
    if (rc != 0) fail(std::strerror(errno));
  }
  fs::rename(tmp, out, ec);
  if (ec) fail(ec.message());
}

}  // namespace lra::host
