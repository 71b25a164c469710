// The SDK as a package for third parties (docs/writing-a-plugin.md): install
// this build tree into a fresh prefix, build the example plugin
// sdk/examples/gated_conv out of tree against it with find_package(LraSdk),
// and inspect and train it with the installed lrahost. One test, because the
// out-of-tree compile of a LibTorch source is the slow part (about a minute).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "plugins/mixer_options.h"
#include "cli_harness.h"
#include "lra/abi.h"
#include "mixer_harness.h"
#include "plugins/loader.h"
#include "tiny_run.h"

namespace fs = std::filesystem;
using lra::test::Outcome;
using lra::test::TempDir;

namespace {

// Runs a shell command, capturing stdout and stderr together.
Outcome shell(const std::string& cmd) {
  Outcome o;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.output.append(buf, n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where each installed file may be; anything else would be a host internal.
bool allowed_install_path(const std::string& rel) {
  auto under = [&](const std::string& dir, const std::string& ext) {
    return rel.rfind(dir, 0) == 0 && rel.find('/', dir.size()) == std::string::npos && rel.size() > ext.size() &&
           rel.compare(rel.size() - ext.size(), ext.size(), ext) == 0;
  };
  return rel == "bin/lrahost" || under("include/lra/", ".h") || under("lib/lrahost/plugins/", ".so") ||
         under("lib/cmake/LraSdk/", ".cmake");
}

// Asks the installed LraSdkConfigVersion.cmake whether it satisfies find_package(LraSdk <requested>).
bool package_accepts(const fs::path& prefix, const std::string& requested) {
  const fs::path script = prefix / "version-check.cmake";
  lra::test::write_text(script,
                        "set(PACKAGE_FIND_VERSION " + requested + ")\n"
                        "string(REPLACE \".\" \";\" parts \"${PACKAGE_FIND_VERSION}\")\n"
                        "list(GET parts 0 PACKAGE_FIND_VERSION_MAJOR)\n"
                        "set(CMAKE_SIZEOF_VOID_P 8)\n"
                        "include(\"" + (prefix / "lib/cmake/LraSdk/LraSdkConfigVersion.cmake").string() + "\")\n"
                        "message(\"compatible=${PACKAGE_VERSION_COMPATIBLE}\")\n");
  auto o = shell(std::string(LRA_CMAKE_COMMAND) + " -P " + quoted(script));
  fs::remove(script);
  return contains(o.output, "compatible=TRUE");
}

}  // namespace

TEST(SdkPackage, ExampleBuildsOutOfTreeAgainstTheInstalledSdkAndRuns) {
  TempDir tmp;
  const fs::path prefix = tmp.path() / "prefix", build = tmp.path() / "build";
  const std::string cmake = LRA_CMAKE_COMMAND;
  const std::string abi = std::to_string(LRA_ABI_MAJOR) + "." + std::to_string(LRA_ABI_MINOR);

  // 1. Install lrahost, its plugins and the SDK from this build tree.
  auto installed = shell(cmake + " --install " + quoted(LRA_BUILD_DIR) + " --prefix " + quoted(prefix));
  ASSERT_EQ(installed.code, 0) << installed.output;

  // 2. The include directory is the SDK, file for file; nothing of the host's inside is installed.
  std::set<std::string> headers, sdk_headers;
  for (const auto& e : fs::recursive_directory_iterator(prefix / "include"))
    if (!e.is_directory()) headers.insert(fs::relative(e.path(), prefix / "include").string());
  for (const auto& e : fs::directory_iterator(fs::path(LRA_SOURCE_DIR) / "sdk/include/lra"))
    if (e.path().extension() == ".h") sdk_headers.insert("lra/" + e.path().filename().string());
  EXPECT_FALSE(sdk_headers.empty());
  EXPECT_EQ(headers, sdk_headers);
  // No generic helper macro (the stringification helper was once LRA_STR) reaches a plugin's code.
  for (const auto& h : headers)
    EXPECT_FALSE(contains(lra::test::read_text(prefix / "include" / h), "#define LRA_STR")) << h;
  for (const auto& e : fs::recursive_directory_iterator(prefix)) {
    if (e.is_directory()) continue;
    const auto rel = fs::relative(e.path(), prefix).string();
    EXPECT_TRUE(allowed_install_path(rel)) << "unexpected installed file " << rel;
  }
  for (const char* want : {"bin/lrahost", "lib/lrahost/plugins/lra_mixer_transformer.so",
                           "lib/lrahost/plugins/lra_task_listops.so", "lib/cmake/LraSdk/LraSdkConfig.cmake",
                           "lib/cmake/LraSdk/LraSdkConfigVersion.cmake", "lib/cmake/LraSdk/LraSdkTargets.cmake",
                           "lib/cmake/LraSdk/LraPlugin.cmake", "lib/cmake/LraSdk/LraTorch.cmake"})
    EXPECT_TRUE(fs::exists(prefix / want)) << want;

  // 3. The package version is the SDK ABI version, SameMajorVersion.
  EXPECT_TRUE(package_accepts(prefix, std::to_string(LRA_ABI_MAJOR)));
  EXPECT_TRUE(package_accepts(prefix, abi));
  EXPECT_FALSE(package_accepts(prefix, std::to_string(LRA_ABI_MAJOR) + "." + std::to_string(LRA_ABI_MINOR + 1)));
  EXPECT_FALSE(package_accepts(prefix, std::to_string(LRA_ABI_MAJOR + 1)));

  // 4. Configure and build the example out of tree, as docs/writing-a-plugin.md does.
  const fs::path example = fs::path(LRA_SOURCE_DIR) / "sdk/examples/gated_conv";
  auto t0 = std::chrono::steady_clock::now();
  auto configured = shell(cmake + " -S " + quoted(example) + " -B " + quoted(build) + " -G Ninja" +
                          " -DCMAKE_MAKE_PROGRAM=" + quoted(LRA_MAKE_PROGRAM) +
                          " -DCMAKE_CXX_COMPILER=" + quoted(LRA_CXX_COMPILER) + " -DCMAKE_PREFIX_PATH=" + quoted(prefix));
  const double configure_s = seconds_since(t0);
  ASSERT_EQ(configured.code, 0) << configured.output;
  EXPECT_FALSE(contains(configured.output, "will reject the plugin")) << configured.output;
  t0 = std::chrono::steady_clock::now();
  auto built = shell(cmake + " --build " + quoted(build));
  const double build_s = seconds_since(t0);
  ASSERT_EQ(built.code, 0) << built.output;
  std::printf("[ timing   ] out-of-tree example: configure %.1f s, build %.1f s\n", configure_s, build_s);
  const fs::path plugin = build / "libgated_conv.so";
  ASSERT_TRUE(fs::exists(plugin)) << built.output;

  // 5. The installed host inspects it and finds its own built-in plugins next to itself.
  const std::string host = quoted(prefix / "bin/lrahost");
  auto inspected = shell(host + " inspect " + quoted(plugin));
  EXPECT_EQ(inspected.code, 0) << inspected.output;
  for (const std::string want : {std::string("gated_conv 1.0.0 (mixer plugin)"),
                                 "SDK ABI       " + abi + " (host " + abi + ")", std::string("status        compatible"),
                                 std::string("causal, padding_mask"), std::string("kernel_size"), std::string("dilated")})
    EXPECT_TRUE(contains(inspected.output, want)) << want << "\n" << inspected.output;
  auto listed = shell(host + " plugins");
  EXPECT_EQ(listed.code, 0) << listed.output;
  EXPECT_TRUE(contains(listed.output, (prefix / "lib/lrahost/plugins").string())) << listed.output;
  EXPECT_TRUE(contains(listed.output, "task   listops")) << listed.output;

  // 6. It trains on a tiny ListOps run with an option set, and the result names it.
  std::string args = lra::test::tiny_run_args((tmp.path() / "data").string(), (tmp.path() / "run").string());
  const std::string builtin = "--plugin transformer";
  args.replace(args.find(builtin), builtin.size(), "--plugin " + quoted(plugin));
  auto ran = shell(host + " " + args + " --set mixer.kernel_size=5");
  ASSERT_EQ(ran.code, 0) << ran.output;
  const auto result = nlohmann::json::parse(lra::test::read_text(tmp.path() / "run/result.json"));
  EXPECT_EQ(result["plugin"]["name"], "gated_conv");
  EXPECT_EQ(result["plugin"]["version"], "1.0.0");
  EXPECT_EQ(result["plugin"]["options"]["kernel_size"], 5);
  EXPECT_EQ(result["plugin"]["options"]["dilated"], true);
  EXPECT_TRUE(result["metrics"]["test_accuracy"].is_number()) << result.dump(2);

  // 6b. Issue 17: it resumes from a checkpoint (its module names load back) and, causal without
  // rotary positions, trains the forgetting curve's LM (smoke manifest, a few steps).
  std::string ckpt = lra::test::tiny_run_args((tmp.path() / "data").string(), (tmp.path() / "ckpt").string()) +
                     " --set train.checkpoint_every=5";
  ckpt.replace(ckpt.find(builtin), builtin.size(), "--plugin " + quoted(plugin));
  auto checkpointed = shell(host + " " + ckpt);
  ASSERT_EQ(checkpointed.code, 0) << checkpointed.output;
  fs::remove(tmp.path() / "ckpt/result.json");
  auto resumed = shell(host + " " + ckpt + " --resume");
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "resumed from")) << resumed.output;
  {
    std::string text;
    while (text.size() < 120000) text += "The jury said the election was conducted fairly. A small boat drifted by. ";
    lra::test::write_text(tmp.path() / "corpus.txt", text);
  }
  auto forgot = shell(host + " forget --plugin " + quoted(plugin) + " --preset smoke --set train.decay_steps=10 " +
                      "--set train.warmup=5 --set train.steps=30 --corpus " + quoted(tmp.path() / "corpus.txt") +
                      " --out " + quoted(tmp.path() / "forget"));
  ASSERT_EQ(forgot.code, 0) << forgot.output;
  const auto curve = nlohmann::json::parse(lra::test::read_text(tmp.path() / "forget/forgetting.json"));
  EXPECT_EQ(curve["model"]["positions"], "none");

  // 7. The same file, loaded the way the host loads it, honours padding and causality exactly.
  const auto& loaded = lra::host::load_plugin(plugin, LRA_KIND_MIXER);
  const lra::Params options = lra::host::resolve_mixer_options(loaded, {{"kernel_size", "5"}});
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    auto spec = lra::test::small_spec(/*d_model=*/32, /*heads=*/4, /*max_len=*/64, causal);
    spec.layer_index = 2;  // dilation 4: the window reaches 8 positions each side
    std::shared_ptr<lra::Mixer> mixer;
    auto st = loaded.mixer().create(spec, options, &mixer);
    ASSERT_TRUE(st.ok()) << st.message;
    mixer->eval();
    EXPECT_TRUE(lra::test::shapes_finite_and_grads(*mixer, 2, 40, 32));
    EXPECT_TRUE(lra::test::padding_invariant(*mixer, 40, 32));
    if (causal) EXPECT_TRUE(lra::test::no_future_leak(*mixer, 40, 32));
    // A 20-token sequence gives the same outputs alone as with 20 padded positions after it.
    torch::NoGradGuard no_grad;
    auto x = lra::test::random_input(1, 40, 32, 7);
    auto padded = mixer->forward(x, lra::test::lengths_mask(40, {20})).narrow(1, 0, 20);
    auto alone = mixer->forward(x.narrow(1, 0, 20).contiguous(), lra::test::lengths_mask(20, {20}));
    EXPECT_LT(lra::test::max_abs_diff(padded, alone), 1e-5);
  }
  std::shared_ptr<lra::Mixer> none;
  auto bad = loaded.mixer().create(lra::test::small_spec(), lra::host::resolve_mixer_options(loaded, {{"kernel_size", "0"}}),
                                   &none);
  EXPECT_EQ(bad.kind, lra::ErrorKind::rules);
  EXPECT_TRUE(contains(bad.message, "kernel_size must be between 1")) << bad.message;

  // 8. A sequence task (SDK 1.4), built out of tree like the mixer (docs/writing-a-task.md),
  // checked and trained by the installed host with that third-party mixer.
  const fs::path task_build = tmp.path() / "task-build";
  auto task_configured = shell(cmake + " -S " + quoted(fs::path(LRA_SOURCE_DIR) / "sdk/examples/copy_task") + " -B " +
                               quoted(task_build) + " -G Ninja -DCMAKE_MAKE_PROGRAM=" + quoted(LRA_MAKE_PROGRAM) +
                               " -DCMAKE_CXX_COMPILER=" + quoted(LRA_CXX_COMPILER) + " -DCMAKE_PREFIX_PATH=" +
                               quoted(prefix));
  ASSERT_EQ(task_configured.code, 0) << task_configured.output;
  auto task_built = shell(cmake + " --build " + quoted(task_build));
  ASSERT_EQ(task_built.code, 0) << task_built.output;
  ASSERT_TRUE(fs::exists(task_build / "libcopy_task.so")) << task_built.output;
  const std::string task_env = "LRA_PLUGIN_PATH=" + quoted(task_build) + " ";
  auto checked = shell(task_env + host + " data check --task copy_demo");
  ASSERT_EQ(checked.code, 0) << checked.output;
  EXPECT_TRUE(contains(checked.output, "a sequence task")) << checked.output;
  lra::test::write_text(tmp.path() / "copy.toml",
                        "schema = \"lrahost.manifest/v1\"\nname = \"copy\"\ntask = \"copy_demo\"\ndescription = \"c\"\n"
                        "[model]\nlayers = 2\nd_model = 32\nheads = 2\nqkv_dim = 32\nffn_dim = 64\ndropout = 0.0\n"
                        "attention_dropout = 0.0\npooling = \"none\"\npositions = \"learned\"\nmax_len = 33\n"
                        "[train]\nsteps = 10\nbatch_size = 16\nlr = 0.003\nschedule = \"constant\"\nwarmup = 0\n"
                        "steps_per_cycle = 10\nweight_decay = 0.0\nbetas = [0.9, 0.999]\neps = 1e-8\ngrad_clip = 0.0\n"
                        "eval_every = 10\ncheckpoint_every = 10\nseed = 0\neval_batch_size = 100\n"
                        "[data]\ntrain_size = 200\n[rules]\nparam_budget_ratio = 10.0\n");
  auto task_ran = shell(task_env + host + " run --plugin " + quoted(plugin) + " --task copy_demo --manifest " +
                        quoted(tmp.path() / "copy.toml") + " --threads 2 --out " + quoted(tmp.path() / "copy-run"));
  ASSERT_EQ(task_ran.code, 0) << task_ran.output;
  const auto copied = nlohmann::json::parse(lra::test::read_text(tmp.path() / "copy-run/result.json"));
  EXPECT_EQ(copied["metrics"]["scored"], "position");
  EXPECT_EQ(copied["metrics"]["test_positions"], 200 * 16);
  EXPECT_EQ(copied["plugin"]["name"], "gated_conv");
}

// docs/writing-a-plugin.md shows the example's files in full; they must stay the files the test above builds.
TEST(SdkPackage, WalkThroughShowsTheExampleFilesVerbatim) {
  const fs::path root = LRA_SOURCE_DIR;
  const std::string doc = lra::test::read_text(root / "docs/writing-a-plugin.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& [file, fence] : {std::pair<std::string, std::string>{"CMakeLists.txt", "```cmake\n"},
                                    std::pair<std::string, std::string>{"gated_conv.cpp", "```cpp\n"}}) {
    const std::string source = lra::test::read_text(root / "sdk/examples/gated_conv" / file);
    ASSERT_FALSE(source.empty()) << file;
    EXPECT_TRUE(contains(doc, fence + source + "```\n")) << "docs/writing-a-plugin.md does not show " << file
                                                           << " verbatim in a " << fence.substr(0, fence.size() - 1)
                                                           << " block";
  }
}
