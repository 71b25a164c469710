// Writing a file so that readers see either the old content or the new, never
// a torn mix: a temporary file beside the target, fsync, rename, fsync of the
// directory. A crash leaves at most a hidden ".NAME.tmp-*" file behind.
//
// Every file the host writes goes through here (result.json, model.pt,
// checkpoints, reports), so a full disk, a read-only file system or a missing
// permission ends the command with ErrorKind::storage (exit 8) and a message
// naming the file, the system's reason and what to do — never an abort, never
// a truncated file in place of the previous good one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lra::host {

// Replaces `file` with `content`. The parent directory must exist. The new
// file gets the usual mode (0666 minus the umask). On failure the temporary
// file is removed, `file` is left as it was, and lra::Error(storage) naming
// the path, the system's reason and what to do is thrown.
void write_file_atomic(const std::filesystem::path& file, std::string_view content);

// Several files of one output, all or nothing: each is written (and fsynced)
// into a staging folder inside `dir` (".lrahost-staging-PID"), and only when
// every one is complete are they renamed into place. A target that is a
// directory, or any write that fails, throws Error(storage) before a single
// file of `dir` is replaced; should a rename fail half-way, the files already
// replaced are put back. Staging folders left by killed processes are removed.
void write_files_atomic(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files);

// The message tail for a failed write: "<path>: <what>: <strerror>; <advice>".
std::string storage_failure(const std::filesystem::path& path, const std::string& what, int err);

}  // namespace lra::host
