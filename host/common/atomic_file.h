// Writing a file so that readers see either the old content or the new, never
// a torn mix: a temporary file beside the target, fsync, rename, fsync of the
// directory. A crash leaves at most a hidden ".NAME.tmp-*" file behind.
#pragma once

#include <filesystem>
#include <string_view>

namespace lra::host {

// Replaces `file` with `content`. The parent directory must exist. The new
// file gets the usual mode (0666 minus the umask). On failure the temporary
// file is removed, `file` is left as it was, and lra::Error(internal) naming
// the path and the system's reason is thrown.
void write_file_atomic(const std::filesystem::path& file, std::string_view content);

}  // namespace lra::host
