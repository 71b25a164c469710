// common/key_pair.cpp — see key_pair.h.
#include "common/key_pair.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/atomic_file.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

// Writes `text` to `file` with `mode`, failing if `file` exists (link(2) of a
// complete temporary file: never a partial key under the final name).
void create_exclusive(const fs::path& file, const std::string& text, mode_t mode) {
  const fs::path tmp = file.parent_path() / ("." + file.filename().string() + ".tmp-" + std::to_string(getpid()));
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) throw Error(ErrorKind::storage, storage_failure(tmp, "cannot create", errno));
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  if (!ok) {
    unlink(tmp.c_str());
    throw Error(ErrorKind::storage, storage_failure(tmp, "cannot write", err));
  }
  if (link(tmp.c_str(), file.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    if (e == EEXIST)
      throw Error(ErrorKind::usage, file.string() + " already exists; keygen never replaces a key (choose another --out)");
    throw Error(ErrorKind::storage, storage_failure(file, "cannot create", e));
  }
  unlink(tmp.c_str());
}

}  // namespace

void create_key_pair(const fs::path& dir) {
  const fs::path priv = dir / kPrivateKeyFile, pub = dir / kPublicKeyFile;
  std::error_code ec;
  for (const auto& f : {priv, pub})
    if (fs::exists(f, ec))
      throw Error(ErrorKind::usage, f.string() + " already exists; keygen never replaces a key (choose another --out)");
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::storage, storage_failure(dir, "cannot create the folder", ec.value()));
  std::string private_pem, public_pem;
  generate_ed25519_pem(&private_pem, &public_pem);
  create_exclusive(priv, private_pem, 0600);
  try {
    create_exclusive(pub, public_pem, 0644);
  } catch (...) {
    fs::remove(priv, ec);  // no half pair
    throw;
  }
}

fs::path author_key_dir() {
  if (const char* d = std::getenv("LRA_AUTHOR_KEY_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return fs::path(x) / "lrahost" / "author-key";
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw Error(ErrorKind::usage, "no HOME, XDG_CONFIG_HOME or LRA_AUTHOR_KEY_DIR: nowhere to keep the author key");
  return fs::path(home) / ".config" / "lrahost" / "author-key";
}

Ed25519PrivateKey author_key(bool* created) {
  const fs::path dir = author_key_dir();
  std::error_code ec;
  *created = !fs::exists(dir / kPrivateKeyFile, ec);
  if (*created) create_key_pair(dir);
  return load_ed25519_private_key(dir / kPrivateKeyFile);
}

std::optional<AuthorPublicKey> author_public_key() {
  fs::path dir;
  try {
    dir = author_key_dir();
  } catch (const Error&) {
    return std::nullopt;
  }
  std::error_code ec;
  if (!fs::is_regular_file(dir / kPublicKeyFile, ec)) return std::nullopt;
  try {
    const std::string raw = load_ed25519_public_key(dir / kPublicKeyFile);
    return AuthorPublicKey{ed25519_key_id(raw), raw};
  } catch (const Error&) {
    return std::nullopt;  // not a key: as if none
  }
}

}  // namespace lra::host
