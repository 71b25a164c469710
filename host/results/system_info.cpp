#include "results/system_info.h"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "common/text.h"

namespace lra::host {
namespace {

std::string read_text(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Calls fn(key, value) for each "key<sep>value" line; stops when fn returns true.
template <class Fn>
void for_each_line(std::string_view text, char sep, Fn&& fn) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto pos = line.find(sep);
    if (pos == std::string_view::npos) continue;
    if (fn(text::trim(line.substr(0, pos)), text::trim(line.substr(pos + 1)))) return;
  }
}

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

namespace detail {

std::optional<std::string> cpuinfo_model(std::string_view text) {
  // x86: "model name"; some ARM and other kernels: "Model", "Hardware", "cpu model".
  std::optional<std::string> fallback;
  std::optional<std::string> found;
  for_each_line(text, ':', [&](std::string_view key, std::string_view value) {
    if (value.empty()) return false;
    if (key == "model name") {
      found = std::string(value);
      return true;
    }
    if (!fallback && (key == "Model" || key == "Hardware" || key == "cpu model")) {
      fallback = std::string(value);
    }
    return false;
  });
  return found ? found : fallback;
}

std::optional<std::uint64_t> meminfo_total_bytes(std::string_view text) {
  std::optional<std::uint64_t> total;
  for_each_line(text, ':', [&](std::string_view key, std::string_view value) {
    if (key != "MemTotal") return false;
    // "16318948 kB"
    std::uint64_t n = 0;
    std::size_t i = 0;
    for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
      n = n * 10 + static_cast<std::uint64_t>(value[i] - '0');
    }
    if (i == 0) return true;
    const std::string_view unit = text::trim(value.substr(i));
    if (unit == "kB" || unit == "KB" || unit == "kb") n *= 1024;
    else if (!unit.empty()) return true;
    total = n;
    return true;
  });
  return total;
}

std::optional<std::string> os_release_pretty_name(std::string_view text) {
  std::optional<std::string> name;
  for_each_line(text, '=', [&](std::string_view key, std::string_view value) {
    if (key != "PRETTY_NAME") return false;
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {  // shell-style escapes
      if (value[i] == '\\' && i + 1 < value.size()) ++i;
      out += value[i];
    }
    if (!out.empty()) name = std::move(out);
    return true;
  });
  return name;
}

}  // namespace detail

nlohmann::json system_info() {
  nlohmann::json cpu;
  cpu["model"] = or_null(detail::cpuinfo_model(read_text("/proc/cpuinfo")));
  const unsigned cores = std::thread::hardware_concurrency();  // 0 when unknown
  cpu["logical_cores"] = cores > 0 ? nlohmann::json(cores) : nlohmann::json(nullptr);

  std::optional<std::string> os_name = detail::os_release_pretty_name(read_text("/etc/os-release"));
  if (!os_name) os_name = detail::os_release_pretty_name(read_text("/usr/lib/os-release"));
  nlohmann::json os;
  os["name"] = or_null(os_name);
  struct utsname u {};
  const bool have_uname = ::uname(&u) == 0;
  os["kernel"] = have_uname ? nlohmann::json(std::string(u.release)) : nlohmann::json(nullptr);
  os["arch"] = have_uname ? nlohmann::json(std::string(u.machine)) : nlohmann::json(nullptr);
  // u.nodename (the hostname) is deliberately left out, see system_info.h.

  nlohmann::json out;
  out["cpu"] = std::move(cpu);
  out["memory_total_bytes"] = or_null(detail::meminfo_total_bytes(read_text("/proc/meminfo")));
  out["os"] = std::move(os);
  return out;
}

}  // namespace lra::host
