// `lrahost keygen --out DIR`: an Ed25519 key pair for signing results
// (common/ed25519.h). The private key is created with mode 0600 and never
// replaces an existing one: losing a key by overwriting it would orphan every
// result it signed.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/ed25519.h"
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

int keygen_command(const std::string& out) {
  check_output_dir_argument(out);  // empty, blank-named, a file: exit 2
  const fs::path dir = out;
  const fs::path priv = dir / "lrahost-key.pem", pub = dir / "lrahost-key.pub.pem";
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
  const Ed25519PrivateKey key = load_ed25519_private_key(priv);
  std::printf("key id       %s\nprivate key  %s (keep it secret: lrahost run/suite --sign-key)\npublic key   %s "
              "(give it to leaderboard maintainers: lrahost verify --trusted-keys DIR)\n",
              key.key_id.c_str(), priv.c_str(), pub.c_str());
  return 0;
}

void add_keygen_command(CLI::App& app, CommandSlot& slot) {
  auto out = std::make_shared<std::string>();
  auto* kg = app.add_subcommand("keygen", "Make an Ed25519 key pair for signing results (lrahost-key.pem, "
                                          "lrahost-key.pub.pem)");
  kg->add_option("--out", *out, "Folder for the two key files")->required();
  on_parsed(kg, slot, out, [](std::string& folder) { return keygen_command(folder); });
}

}  // namespace lra::host
