#include "isolation/readable_copy.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

constexpr fs::perms kReadable = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                fs::perms::others_read;
constexpr fs::perms kListable = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec;

}  // namespace

void make_readable_folder(const fs::path& dir) {
  fs::create_directories(dir);
  fs::permissions(dir, kListable);
}

void copy_readable(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, kReadable);
}

void copy_readable_tree(const fs::path& from, const fs::path& to) {
  make_readable_folder(to);
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path target = to / fs::relative(it->path(), from);
    if (it->is_symlink()) continue;
    if (it->is_directory()) make_readable_folder(target);
    else if (it->is_regular_file()) copy_readable(it->path(), target);
  }
}

}  // namespace lra::host
