// lra/lra.h — umbrella header of the lrahost SDK.
#pragma once

#include "lra/abi.h"
#include "lra/attention.h"
#include "lra/mixer.h"
#include "lra/options.h"
#include "lra/status.h"
#include "lra/task.h"
