// model/task_shape.h — the model-facing shape of each LRA task (vocabulary,
// classes, one input or a pair), known without loading its data: what
// `lrahost bench --task`, the parameter-budget tables and `verify`'s count of
// an official manifest's reference Transformer build the classifier from. The task plugins report the same values once data are loaded
// (lra::TaskInfo); tests/integration/test_bench_cli.cpp checks the two agree.
#pragma once

#include <cstdint>
#include <string>

namespace lra::host {

struct TaskShape {
  int64_t vocab_size = 0, num_classes = 0;
  bool paired = false;
};

// listops, text, retrieval, image, pathfinder, pathx; any other name is
// lra::Error(usage) listing these.
TaskShape lra_task_shape(const std::string& task);

}  // namespace lra::host
