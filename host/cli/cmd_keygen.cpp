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
#include "common/key_pair.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;

int keygen_command(const std::string& out) {
  check_output_dir_argument(out);  // empty, blank-named, a file: exit 2
  const fs::path dir = out;
  const fs::path priv = dir / kPrivateKeyFile, pub = dir / kPublicKeyFile;
  create_key_pair(dir);
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
