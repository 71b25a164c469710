#include "common/untrusted_file.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lra/status.h"
namespace lra::host {
std::string read_untrusted_file(const std::filesystem::path& file, uint64_t max_bytes) {
  const int fd = open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::data, file.string() + ": cannot be opened as a plain file");
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    throw Error(ErrorKind::data, file.string() + ": not a regular file within " + std::to_string(max_bytes) + " bytes");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t k = read(fd, out.data() + got, out.size() - got);
    if (k <= 0) break;
    got += static_cast<size_t>(k);
  }
  close(fd);
  out.resize(got);
  return out;
}
}
