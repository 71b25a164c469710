#include "model/task_shape.h"

#include "lra/status.h"

namespace lra::host {

TaskShape lra_task_shape(const std::string& task) {
  if (task == "listops") return {17, 10, false};   // tasks/listops/expr.h: 0 = padding, 16 symbols
  if (task == "text") return {257, 2, false};      // tasks/text/imdb_reader.h: byte + 1
  if (task == "retrieval") return {257, 2, true};  // tasks/retrieval/aan_reader.h: two documents per example
  if (task == "image") return {256, 10, false};    // tasks/image/cifar_reader.h: gray values
  if (task == "pathfinder" || task == "pathx") return {256, 2, false};  // gray values; connected or not
  throw Error(ErrorKind::usage, "task '" + task + "' has no known shape; expected listops, text, retrieval, image, "
                                "pathfinder or pathx");
}

}  // namespace lra::host
