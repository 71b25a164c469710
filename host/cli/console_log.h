// cli/console_log.h — the logger commands write progress to: stderr, one
// "[HH:MM:SS] message" line each, flushed at once (run.log is added as a
// second sink by `run`, and must be current while a long run is going).
#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace lra::host {

std::shared_ptr<spdlog::logger> make_logger();

}  // namespace lra::host
