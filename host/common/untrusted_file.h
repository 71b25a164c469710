// Reading a file that hostile code could have planted, e.g. what a sandboxed
// plugin left in its scratch folder: it may be a symlink to a secret
// (/etc/shadow, a signing key), a FIFO that blocks the reader forever, a
// device such as /dev/zero that never ends, or simply huge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace lra::host {

// Reads `file` only if its last component is a regular file (a symlink, FIFO,
// socket or device is refused without being opened for reading, so nothing
// blocks), and at most `max_bytes` (more is an error, not a truncation). The
// parent folder is opened without following a symlink in its last component
// and the name is looked up in it: pass scratch/name, where scratch is the
// folder the untrusted code could write into but not replace, never a deeper
// path the code could have swapped for a symlink.
// Throws lra::Error(ErrorKind::data) naming the file and why.
std::string read_untrusted_file(const std::filesystem::path& file, uint64_t max_bytes);

}  // namespace lra::host
