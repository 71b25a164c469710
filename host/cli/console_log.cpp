#include "cli/console_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace lra::host {

std::shared_ptr<spdlog::logger> make_logger() {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern("[%H:%M:%S] %v");
  auto log = std::make_shared<spdlog::logger>("lrahost", console);
  log->set_level(spdlog::level::info);
  log->flush_on(spdlog::level::info);  // run.log must be current while a long run is going
  return log;
}

}  // namespace lra::host
