#include "data/task_data.h"

#include <cstdlib>
#include <new>

#include "common/out_of_memory.h"
#include "common/text.h"
#include "lra/status.h"
#include "train/batches.h"

namespace lra::host {

std::filesystem::path data_root(const std::optional<std::string>& flag) {
  if (flag && !flag->empty()) return *flag;
  if (const char* env = std::getenv("LRA_DATA_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "lrahost" / "data";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "lrahost" / "data";
  return std::filesystem::current_path() / "lrahost-data";
}

lra::Params resolve_data_params(const LoadedPlugin& task, const lra::Params& given, const std::string& where) {
  std::vector<lra::OptionSpec> specs;
  if (auto st = task.task().data_options(&specs); !st.ok()) throw Error(st.kind, st.message);
  lra::Params out;
  for (const auto& s : specs) out[s.name] = s.default_value;
  for (const auto& [key, value] : given) {
    auto it = out.find(key);
    if (it == out.end()) {
      std::string valid;
      for (const auto& s : specs) valid += (valid.empty() ? "" : ", ") + s.name;
      throw Error(ErrorKind::rules, where + ": unknown key 'data." + key + "' for task '" + task.descriptor.name +
                                        "' (valid: " + valid + ")");
    }
    const bool int_for_float = value.index() == 1 && it->second.index() == 2;
    if (value.index() != it->second.index() && !int_for_float)
      throw Error(ErrorKind::rules, where + ": 'data." + key + "' must be " + type_name(it->second) + ", got " +
                                        type_name(value) + " " + to_string(value));
    it->second = int_for_float ? lra::Value(static_cast<double>(std::get<int64_t>(value))) : value;
  }
  return out;
}

void check_task_kind(const lra::Dataset& d, const std::string& task) {
  auto fail = [&](const std::string& why) { throw Error(ErrorKind::data, "task '" + task + "': " + why); };
  const auto readout = d.sequence.readout;
  if (readout != lra::SequenceReadout::every_position && readout != lra::SequenceReadout::from_last_state)
    fail("SequenceTargets::readout is " + std::to_string(static_cast<int32_t>(readout)) +
         ", not a readout this host knows (0 every_position, 1 from_last_state)");
  if (readout != lra::SequenceReadout::every_position && !d.is_sequence_task())
    fail("SequenceTargets::readout is from_last_state, but the task gives no per-position targets "
         "(sequence.num_classes = 0): a classification task leaves Dataset::sequence alone");
  if (d.is_sequence_task()) {
    if (d.info.num_classes != 0)
      fail("a sequence task (sequence.num_classes = " + std::to_string(d.sequence.num_classes) +
           ") sets TaskInfo::num_classes to 0 (it has no labels), not " + std::to_string(d.info.num_classes));
    if (d.info.paired) fail("a sequence task cannot be paired (one input per example)");
    if (d.sequence.num_classes > (int64_t{1} << 24))
      fail("sequence.num_classes = " + std::to_string(d.sequence.num_classes) + " is more than 2^24 classes");
  } else if (d.info.num_classes < 2) {
    fail("TaskInfo::num_classes = " + std::to_string(d.info.num_classes) +
         ": a classification task has at least 2 classes (a sequence task sets Dataset::sequence.num_classes instead)");
  }
}

LoadedData load_task_data(const LoadedPlugin& task, const lra::Params& given, const std::filesystem::path& root,
                          int threads, bool allow_generate, const std::string& where) {
  LoadedData out;
  out.params = resolve_data_params(task, given, where);
  lra::DataRequest req;
  req.data_root = root.string();
  req.params = out.params;
  req.threads = threads;
  req.allow_generate = allow_generate;
  req.enforce_sizes = allow_generate;  // `data check` (no generation) reports what the files hold
  if (auto st = task.task().load(req, &out.dataset); !st.ok()) {
    // The SDK's boundary (lra::guarded) reports a std::bad_alloc thrown in the
    // task as an internal error with what() "std::bad_alloc": it is exit 7.
    if (st.kind == ErrorKind::internal && is_out_of_memory_message(st.message))
      throw Error(ErrorKind::memory, "task '" + task.descriptor.name + "' ran out of memory (" + text::first_line(st.message) +
                                         ") loading its data from " + root.string() + ": the splits do not fit in memory");
    throw Error(st.kind, st.message);
  }
  auto& d = out.dataset;
  // A plugin built before SDK 1.4 never knew Dataset::sequence: whatever its
  // bytes hold is not its answer.
  if (task.descriptor.abi_minor < 4 && task.descriptor.abi_major == 1) d.sequence = {};
  // Nor before SDK 1.5 SequenceTargets::readout: its targets are read at every position.
  if (task.descriptor.abi_minor < 5 && task.descriptor.abi_major == 1)
    d.sequence.readout = lra::SequenceReadout::every_position;
  check_task_kind(d, task.descriptor.name);
  for (const auto& [name, split] : {std::pair<const char*, const lra::Split*>{"train", &d.train},
                                    {"validation", &d.val}, {"test", &d.test}}) {
    validate_split(*split, d.info, name);
    if (const auto* t = split_targets(d, *split)) validate_split_targets(*split, *t, d.sequence, name);
  }
  out.fingerprint = dataset_fingerprint(d);
  for (const auto& [name, split] : {std::pair<const char*, const lra::Split*>{"train", &d.train},
                                    {"val", &d.val}, {"test", &d.test}})
    out.split_fingerprints[name] = split_fingerprint(name, *split, split_targets(d, *split));
  return out;
}

}  // namespace lra::host
