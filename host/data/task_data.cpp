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
  validate_split(out.dataset.train, out.dataset.info, "train");
  validate_split(out.dataset.val, out.dataset.info, "validation");
  validate_split(out.dataset.test, out.dataset.info, "test");
  out.fingerprint = dataset_fingerprint(out.dataset);
  for (const auto& [name, split] : {std::pair<const char*, const lra::Split*>{"train", &out.dataset.train},
                                    {"val", &out.dataset.val}, {"test", &out.dataset.test}})
    out.split_fingerprints[name] = split_fingerprint(name, *split);
  return out;
}

}  // namespace lra::host
