// data/task_data: a task plugin that runs out of memory while loading (issue 18:
// the SDK boundary turns std::bad_alloc into "internal error: std::bad_alloc",
// exit 1; the host reports it as exit 7 naming the task and the data folder);
// SequenceTargets::readout (SDK 1.5) read only from plugins built for 1.5.
#include <new>
#include <string>
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

// A sequence task (each target its own token) that asks for `readout`; a
// classification task when `classes` > 0.
class ReadoutTask : public lra::TaskPlugin {
 public:
  explicit ReadoutTask(lra::SequenceReadout readout, int64_t classes = 0) : readout_(readout), classes_(classes) {}
  lra::Status data_options(std::vector<lra::OptionSpec>* out) const noexcept override {
    return lra::guarded([&] { out->clear(); });
  }
  lra::Status load(const lra::DataRequest&, lra::Dataset* out) const noexcept override {
    return lra::guarded([&] {
      *out = lra::Dataset{};
      out->info.vocab_size = 4;
      out->info.num_classes = classes_;
      for (auto* s : {&out->train, &out->val, &out->test}) {
        s->tokens = {0, 1, 2, 3, 3, 2};
        s->offsets = {0, 4, 6};
        if (classes_ > 0) s->labels = {0, 1};
      }
      if (classes_ == 0) {
        out->sequence.num_classes = 4;
        for (auto* t : {&out->sequence.train, &out->sequence.val, &out->sequence.test}) t->targets = {0, 1, 2, 3, 3, 2};
      }
      out->sequence.readout = readout_;
    });
  }
  lra::Status generate(const std::string&, const lra::Params&, int64_t, uint64_t, int) const noexcept override {
    return lra::Status::Error(lra::ErrorKind::usage, "no generator");
  }

 private:
  lra::SequenceReadout readout_;
  int64_t classes_;
};

lra::host::LoadedData load_as(const lra::TaskPlugin& task, uint16_t abi_minor) {
  lra::host::LoadedPlugin plugin;
  plugin.descriptor.name = "readout";
  plugin.descriptor.kind = LRA_KIND_TASK;
  plugin.descriptor.abi_major = 1;
  plugin.descriptor.abi_minor = abi_minor;
  plugin.interface = &task;
  return lra::host::load_task_data(plugin, {}, "/data/root", 1, false, "test");
}

std::string data_error(const lra::TaskPlugin& task, uint16_t abi_minor) {
  try {
    load_as(task, abi_minor);
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data) << e.what();
    return e.what();
  }
  return "no error";
}

}  // namespace

// A plugin built for 1.4 never knew the readout: what its bytes hold there is
// ignored, and its data fingerprint is the one every 1.4 sequence task had.
TEST(TaskData, TheReadoutIsReadOnlyFromPluginsBuiltForSdk15) {
  const ReadoutTask last(lra::SequenceReadout::from_last_state), every(lra::SequenceReadout::every_position);
  const auto v14 = load_as(last, 4), v15 = load_as(last, 5), plain = load_as(every, 5);
  EXPECT_EQ(v14.dataset.sequence.readout, lra::SequenceReadout::every_position);
  EXPECT_EQ(v15.dataset.sequence.readout, lra::SequenceReadout::from_last_state);
  EXPECT_EQ(v14.fingerprint, plain.fingerprint);
  EXPECT_NE(v15.fingerprint, plain.fingerprint) << "a readout other than the default is part of the data";
  EXPECT_EQ(v15.split_fingerprints, plain.split_fingerprints) << "the splits' content is the same";
}

TEST(TaskData, AReadoutTheHostDoesNotKnowOrOnAClassificationTaskIsRefused) {
  const ReadoutTask unknown(static_cast<lra::SequenceReadout>(7));
  const std::string why = data_error(unknown, 5);
  EXPECT_NE(why.find("task 'readout': SequenceTargets::readout is 7"), std::string::npos) << why;
  EXPECT_EQ(load_as(unknown, 4).dataset.sequence.readout, lra::SequenceReadout::every_position) << "1.4: never read";
  const ReadoutTask classification(lra::SequenceReadout::from_last_state, 2);
  const std::string cls = data_error(classification, 5);
  EXPECT_NE(cls.find("a classification task leaves Dataset::sequence alone"), std::string::npos) << cls;
}
