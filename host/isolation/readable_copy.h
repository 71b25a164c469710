// Files and folders the sandbox's user nobody may read: a root host's own
// (mkdtemp's 0700, /root) are not, so what the sandbox reads is copied into
// the sandbox area with these modes (folders 0755, files 0644).
#pragma once

#include <filesystem>

namespace lra::host {

// Creates `dir` (and its parents) and makes it listable by everyone.
void make_readable_folder(const std::filesystem::path& dir);
// Copies one file, readable by everyone; its folder is made if missing.
void copy_readable(const std::filesystem::path& from, const std::filesystem::path& to);
// Copies a folder's regular files and folders (no links, no devices), readable by everyone.
void copy_readable_tree(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace lra::host
