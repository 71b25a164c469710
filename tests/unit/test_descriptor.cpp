// Reading descriptors from plugin files and the compatibility rules.
#include <gtest/gtest.h>

#include <fstream>

#include "lra/status.h"
#include "plugins/descriptor.h"
#include "plugins/loader.h"

using namespace lra::host;

namespace {
const std::string kTransformer = std::string(LRA_PLUGIN_DIR) + "/lra_mixer_transformer.so";

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(Descriptor, ReadFromFileWithoutLoading) {
  Descriptor d = read_descriptor(kTransformer);
  EXPECT_EQ(d.name, "transformer");
  EXPECT_EQ(d.kind, static_cast<uint32_t>(LRA_KIND_MIXER));
  EXPECT_EQ(d.abi_major, LRA_ABI_MAJOR);
  EXPECT_TRUE(d.capabilities & LRA_CAP_CAUSAL);
  EXPECT_EQ(d.torch_version, host_descriptor().torch_version);
  EXPECT_TRUE(compatibility_problems(d, host_descriptor(), LRA_KIND_MIXER).empty());
}

TEST(Descriptor, NonElfAndMissingFilesAreRejected) {
  const auto path = std::filesystem::temp_directory_path() / "lra_not_elf.so";
  std::ofstream(path) << "hello";
  try {
    read_descriptor(path);
    FAIL() << "expected rejection";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
    EXPECT_NE(std::string(e.what()).find("not an ELF file"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_descriptor("/no/such/plugin.so"), lra::Error);
}

TEST(Compatibility, EachMismatchNamesBothSides) {
  const Descriptor& host = host_descriptor();
  Descriptor p = read_descriptor(kTransformer);

  auto major = p;
  major.abi_major = host.abi_major + 1;
  auto problems = compatibility_problems(major, host, 0);
  ASSERT_EQ(problems.size(), 1u) << "a different major stops all further checks";
  EXPECT_TRUE(mentions(problems, "ABI " + std::to_string(host.abi_major + 1) + ".")) << problems[0];

  auto minor = p;
  minor.abi_minor = host.abi_minor + 1;
  EXPECT_TRUE(mentions(compatibility_problems(minor, host, 0), "upgrade lrahost"));

  auto older_minor = p;  // host minor >= plugin minor is fine
  older_minor.abi_minor = 0;
  EXPECT_TRUE(compatibility_problems(older_minor, host, 0).empty());

  auto torch = p;
  torch.torch_version = "2.11.0";
  EXPECT_TRUE(mentions(compatibility_problems(torch, host, 0), "LibTorch 2.11.0, host runs " + host.torch_version));

  auto abi = p;
  abi.cxx11_abi = 1 - host.cxx11_abi;
  EXPECT_TRUE(mentions(compatibility_problems(abi, host, 0), "_GLIBCXX_USE_CXX11_ABI"));

  auto lib = p;
  lib.stdlib = "libc++ 17000";
  EXPECT_TRUE(mentions(compatibility_problems(lib, host, 0), "libc++"));

  auto magic = p;
  magic.magic = 0;
  EXPECT_TRUE(mentions(compatibility_problems(magic, host, 0), "magic"));

  EXPECT_TRUE(mentions(compatibility_problems(p, host, LRA_KIND_TASK), "a task plugin is needed"));
}

TEST(Loader, SdkRefusesCausalModeWithoutTheCapability) {
  const auto& p = load_plugin(std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_ballast.so", LRA_KIND_MIXER);
  lra::MixerSpec spec;
  spec.d_model = 8;
  spec.heads = 2;
  spec.qkv_dim = 8;
  spec.max_len = 4;
  spec.causal = true;
  std::shared_ptr<lra::Mixer> m;
  auto st = p.mixer().create(spec, {{"ballast", int64_t{0}}, {"note", std::string("x")}}, &m);
  EXPECT_EQ(st.kind, lra::ErrorKind::plugin);
  EXPECT_NE(st.message.find("does not support causal mode"), std::string::npos) << st.message;
  EXPECT_FALSE(m);
}

TEST(Loader, LoadsOnceAndChecksTheKind) {
  const std::string file = std::string(LRA_PLUGIN_DIR) + "/lra_mixer_transformer.so";
  const auto& a = load_plugin(file, LRA_KIND_MIXER);
  const auto& b = load_plugin(file, LRA_KIND_MIXER);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a.sha256.size(), 64u);
  EXPECT_THROW(load_plugin(file, LRA_KIND_TASK), lra::Error);
}

// The accessors check the descriptor's kind instead of casting the entry
// point's interface to whatever was asked for.
TEST(Loader, AccessorOfTheOtherKindThrowsInsteadOfCasting) {
  const auto& mixer = load_plugin(kTransformer, LRA_KIND_MIXER);
  EXPECT_NO_THROW(mixer.mixer());
  try {
    mixer.task();
    FAIL() << "task() on a mixer plugin returned";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("plugin 'transformer'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a mixer plugin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("task interface"), std::string::npos) << e.what();
  }

  LoadedPlugin task;  // no task .so needed: the check happens before the interface is touched
  task.descriptor.name = "some_task";
  task.descriptor.kind = LRA_KIND_TASK;
  try {
    task.mixer();
    FAIL() << "mixer() on a task plugin returned";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("plugin 'some_task'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a task plugin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mixer interface"), std::string::npos) << e.what();
  }

  LoadedPlugin unknown;  // a kind the SDK does not define: the plugin's fault
  unknown.descriptor.name = "odd";
  unknown.descriptor.kind = 7;
  for (auto call : {+[](const LoadedPlugin& p) { p.mixer(); }, +[](const LoadedPlugin& p) { p.task(); }}) {
    try {
      call(unknown);
      FAIL() << "an accessor returned for kind 7";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
      EXPECT_NE(std::string(e.what()).find("plugin 'odd'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("declares kind 7"), std::string::npos) << e.what();
    }
  }
}
