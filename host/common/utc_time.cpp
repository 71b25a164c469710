#include "common/utc_time.h"

#include <ctime>

namespace lra::host {

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

}  // namespace lra::host
