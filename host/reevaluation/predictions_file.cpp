#include "reevaluation/predictions_file.h"

#include <cstring>

#include "common/atomic_file.h"
#include "lra/status.h"

namespace lra::host {
namespace {
constexpr char kMagic[8] = {'L', 'R', 'A', 'P', 'R', 'E', 'D', '1'};
}

uint64_t predictions_file_size(uint64_t count) { return sizeof kMagic + sizeof(uint64_t) + count * sizeof(int32_t); }

void write_predictions_file(const std::filesystem::path& file, const std::vector<int32_t>& classes) {
  std::string out(kMagic, sizeof kMagic);
  const uint64_t n = classes.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(classes.data()), classes.size() * sizeof(int32_t));
  write_file_atomic(file, out);
}

std::vector<int32_t> parse_predictions(const std::string& bytes, uint64_t count, int64_t num_classes) {
  auto bad = [](const std::string& why) {
    return Error(ErrorKind::plugin, "the sandboxed evaluation returned no usable predictions: " + why);
  };
  if (bytes.size() < sizeof kMagic + sizeof(uint64_t) || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw bad("not a predictions file");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data() + sizeof kMagic, sizeof n);
  if (n != count) throw bad(std::to_string(n) + " predictions for " + std::to_string(count) + " examples");
  if (bytes.size() != predictions_file_size(count))
    throw bad(std::to_string(bytes.size()) + " bytes, expected " + std::to_string(predictions_file_size(count)));
  std::vector<int32_t> classes(count);
  std::memcpy(classes.data(), bytes.data() + sizeof kMagic + sizeof n, count * sizeof(int32_t));
  for (uint64_t i = 0; i < count; ++i)
    if (classes[i] < 0 || classes[i] >= num_classes)
      throw bad("prediction " + std::to_string(i) + " is class " + std::to_string(classes[i]) + ", the task has " +
                std::to_string(num_classes) + " classes");
  return classes;
}

}  // namespace lra::host
