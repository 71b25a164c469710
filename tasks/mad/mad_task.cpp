// One MAD task plugin (a sequence task; it claims the SDK's own ABI, 1.5 for
// compression's SequenceReadout::from_last_state). CMakeLists.txt builds this
// file six times, once per task, defining LRA_MAD_<TASK>; examples are drawn
// in memory from the [data] seed whenever the task is loaded — no files.
#include "lra/task.h"
#include "mad_dataset.h"

namespace {

namespace mad = lra::tasks::mad;

#if defined(LRA_MAD_RECALL)
constexpr mad::Task kTask = mad::Task::recall;
#define LRA_MAD_PLUGIN_NAME "mad_recall"
#define LRA_MAD_PLUGIN_DESCRIPTION "MAD in-context recall: multi-query key-value recall (sequence task)"
#elif defined(LRA_MAD_FUZZY_RECALL)
constexpr mad::Task kTask = mad::Task::fuzzy_recall;
#define LRA_MAD_PLUGIN_NAME "mad_fuzzy_recall"
#define LRA_MAD_PLUGIN_DESCRIPTION "MAD fuzzy in-context recall: keys and values of several tokens (sequence task)"
#elif defined(LRA_MAD_NOISY_RECALL)
constexpr mad::Task kTask = mad::Task::noisy_recall;
#define LRA_MAD_PLUGIN_NAME "mad_noisy_recall"
#define LRA_MAD_PLUGIN_DESCRIPTION "MAD noisy in-context recall: key-value recall among noise tokens (sequence task)"
#elif defined(LRA_MAD_SELECTIVE_COPY)
constexpr mad::Task kTask = mad::Task::selective_copy;
#define LRA_MAD_PLUGIN_NAME "mad_selective_copy"
#define LRA_MAD_PLUGIN_DESCRIPTION "MAD selective copying: copy the symbols scattered among blanks (sequence task)"
#elif defined(LRA_MAD_COMPRESSION)
constexpr mad::Task kTask = mad::Task::compression;
#define LRA_MAD_PLUGIN_NAME "mad_compression"
#define LRA_MAD_PLUGIN_DESCRIPTION \
  "MAD compression: decode every token from the last one's state (sequence task for an encoder-decoder)"
#elif defined(LRA_MAD_MEMORIZATION)
constexpr mad::Task kTask = mad::Task::memorization;
#define LRA_MAD_PLUGIN_NAME "mad_memorization"
#define LRA_MAD_PLUGIN_DESCRIPTION "MAD memorization: a fixed key-value map learned in training (sequence task)"
#else
#error "define one of LRA_MAD_RECALL, _FUZZY_RECALL, _NOISY_RECALL, _SELECTIVE_COPY, _COMPRESSION, _MEMORIZATION"
#endif

class MadTask final : public lra::TaskPlugin {
 public:
  lra::Status data_options(std::vector<lra::OptionSpec>* out) const noexcept override {
    return lra::guarded([&] { *out = mad::option_specs(kTask); });
  }

  lra::Status load(const lra::DataRequest& request, lra::Dataset* out) const noexcept override {
    return lra::guarded([&] { mad::load_dataset(kTask, request.params, request.threads, out); });
  }

  lra::Status generate(const std::string&, const lra::Params&, int64_t, uint64_t, int) const noexcept override {
    return lra::Status::Error(lra::ErrorKind::usage,
                              mad::task_name(kTask) +
                                  " draws its examples in memory from [data] seed whenever it is "
                                  "loaded (deterministic, seconds): there are no files to generate");
  }
};

}  // namespace

LRA_TASK_PLUGIN(LRA_MAD_PLUGIN_NAME, "1.0.0", LRA_MAD_PLUGIN_DESCRIPTION, MadTask)
