// The Pathfinder generator's random stream: the task generators' shared one
// (tasks/common/stream_rng.h), one per image.
#pragma once

#include "stream_rng.h"

namespace lra::pathfinder {
using lra::tasks::Rng;
using lra::tasks::splitmix64;
}  // namespace lra::pathfinder
