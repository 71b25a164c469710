#include "cli/run_support.h"

#include <sys/resource.h>

#include <ctime>
#include <variant>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <torch/cuda.h>

#include "common/plugin_calls.h"
#include "lra/status.h"

namespace lra::host {

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

nlohmann::json params_json(const lra::Params& p) {
  auto j = nlohmann::json::object();
  for (const auto& [k, v] : p) std::visit([&, key = k](const auto& x) { j[key] = x; }, v);
  return j;
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

torch::Device pick_device(const std::string& want) {
  if (want == "cpu") return torch::kCPU;
  if (want == "cuda") {
    if (!torch::cuda::is_available())
      throw Error(ErrorKind::usage, "--device cuda: this lrahost was built against a LibTorch without CUDA or no GPU is "
                                    "visible; use --device cpu or auto");
    return torch::kCUDA;
  }
  return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern("[%H:%M:%S] %v");
  auto log = std::make_shared<spdlog::logger>("lrahost", console);
  log->set_level(spdlog::level::info);
  log->flush_on(spdlog::level::info);  // run.log must be current while a long run is going
  return log;
}

MixerFactory plugin_mixer_factory(const LoadedPlugin& mixer, const lra::Params& options) {
  // Faults in the plugin's code from here on name it (common/plugin_calls.h).
  plugin_calls::set_plugin(mixer.descriptor.name);
  plugin_calls::install_crash_handler();
  return [&mixer, options](const lra::MixerSpec& ms) {
    std::shared_ptr<lra::Mixer> m;
    plugin_calls::Call call("create");
    if (auto st = mixer.mixer().create(ms, options, &m); !st.ok())
      throw Error(st.kind == ErrorKind::internal ? ErrorKind::plugin : st.kind,
                  "plugin '" + mixer.descriptor.name + "' could not build its mixer: " + st.message);
    return m;
  };
}

}  // namespace lra::host
