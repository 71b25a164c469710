// common/utc_time.h — the current UTC time as text (result stamps, default
// run folder names).
#pragma once

#include <string>

namespace lra::host {

// strftime of the current UTC time; the default is ISO 8601 ("2026-11-25T14:03:00Z").
std::string utc_now(const char* fmt = "%Y-%m-%dT%H:%M:%SZ");

}  // namespace lra::host
