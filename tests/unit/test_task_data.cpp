// data/task_data: a task plugin that runs out of memory while loading (issue 18:
// the SDK boundary turns std::bad_alloc into "internal error: std::bad_alloc",
// exit 1; the host reports it as exit 7 naming the task and the data folder).
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "data/task_data.h"
#include "lra/status.h"
#include "lra/task.h"
#include "plugins/loader.h"

namespace {

class OutOfMemoryTask : public lra::TaskPlugin {
 public:
  lra::Status data_options(std::vector<lra::OptionSpec>* out) const noexcept override {
    return lra::guarded([&] { out->clear(); });
  }
  lra::Status load(const lra::DataRequest&, lra::Dataset*) const noexcept override {
    return lra::guarded([] { throw std::bad_alloc(); });
  }
  lra::Status generate(const std::string&, const lra::Params&, int64_t, uint64_t, int) const noexcept override {
    return lra::Status::Error(lra::ErrorKind::usage, "no generator");
  }
};

TEST(TaskData, BadAllocInATaskLoaderIsTheMemoryKind) {
  const OutOfMemoryTask task;
  lra::host::LoadedPlugin plugin;
  plugin.descriptor.name = "hungry";
  plugin.descriptor.kind = LRA_KIND_TASK;
  plugin.interface = static_cast<const lra::TaskPlugin*>(&task);
  try {
    lra::host::load_task_data(plugin, {}, "/data/root", 1, false, "test");
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::memory) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find("task 'hungry' ran out of memory (std::bad_alloc) loading its data from /data/root"),
              std::string::npos)
        << msg;
  }
}

}  // namespace
