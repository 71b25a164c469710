// Issue 18, through the binary: one writer per output directory, checked
// atomic writes (a full disk is exit 8 and the previous model.pt stays), bad
// --out is exit 2, --resume appends to run.log, validates state.json and falls
// back past a corrupt checkpoint, seeds outside 0..2^63-1 are refused, sweep
// run names are unique per plugin file and its exit code reports failed runs,
// and a suite directory holds one plugin.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Holds DIR/.lrahost.lock as a running lrahost would (flock + PID).
class HeldLock {
 public:
  explicit HeldLock(const fs::path& dir) : file_(dir / ".lrahost.lock") {
    fs::create_directories(dir);
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::flock(fd_, LOCK_EX | LOCK_NB), 0);
    const std::string pid = std::to_string(::getpid()) + "\n";
    EXPECT_EQ(::write(fd_, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
  }
  ~HeldLock() {
    ::unlink(file_.c_str());
    ::close(fd_);
  }
  const fs::path& file() const { return file_; }

 private:
  fs::path file_;
  int fd_ = -1;
};

// A PID that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// The tiny ListOps data, generated once for the whole test program.
const std::string& data_dir() {
  static TempDir* dir = new TempDir();  // kept for the program's life
  static bool made = false;
  if (!made) {
    auto o = lrahost(tiny_run_args(dir->str(), (dir->path() / "warm-up").string()));
    EXPECT_EQ(o.code, 0) << o.output;
    made = true;
  }
  static const std::string s = dir->str();
  return s;
}

std::string tiny(const fs::path& out) { return tiny_run_args(data_dir(), out.string()); }

// --- the output-directory lock -------------------------------------------------

TEST(OutputLock, EveryWritingCommandRefusesASecondWriterNamingPidAndLockFile) {
  TempDir d;
  const fs::path out = d.path() / "out";
  HeldLock held(out);
  const std::string pid = "PID " + std::to_string(::getpid());
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"run", tiny(out)},
      {"suite", "suite --plugin transformer --tasks listops --seeds 0 --preset smoke --out " + out.string()},
      {"sweep", "sweep --plugins transformer --tasks listops --seeds 0 --slurm --out " + out.string()},
      {"sweep --collect", "sweep --collect " + out.string()},
      {"forget", "forget --compare a.json --out " + out.string()},
      {"bench", "bench --report a.json --out " + out.string()},
      {"leaderboard", "leaderboard " + (d.path() / "results").string() + " --out " + out.string()},
  };
  fs::create_directories(d.path() / "results");  // an empty set of results is a valid (empty) leaderboard
  for (const auto& [name, args] : commands) {
    auto o = lrahost(args);
    EXPECT_EQ(o.code, 2) << name << ": " << o.output;
    EXPECT_TRUE(contains(o.output, pid)) << name << ": " << o.output;
    EXPECT_TRUE(contains(o.output, held.file().string())) << name << ": " << o.output;
  }
  EXPECT_FALSE(fs::exists(out / "result.json"));
  EXPECT_FALSE(fs::exists(out / "index.html"));
}

TEST(OutputLock, AStaleLockOfADeadProcessIsTakenOverAndSaidSo) {
  TempDir d;
  const fs::path out = d.path() / "run";
  fs::create_directories(out);
  const pid_t dead = dead_pid();
  write_text(out / ".lrahost.lock", std::to_string(dead) + "\n");  // left by a killed lrahost
  auto o = lrahost(tiny(out));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "took over the stale lock")) << o.output;
  EXPECT_TRUE(contains(o.output, std::to_string(dead))) << o.output;
  EXPECT_TRUE(contains(read_text(out / "run.log"), "took over the stale lock"));  // the run's own record
  EXPECT_TRUE(fs::exists(out / "result.json"));
  EXPECT_FALSE(fs::exists(out / ".lrahost.lock"));  // released at the end
}

TEST(OutputLock, ASecondRunIntoARunningRunsDirectoryIsRefusedAndAKilledRunsLockTakenOver) {
  TempDir d;
  const fs::path out = d.path() / "run";
  data_dir();
  // A run far too long to finish during the test.
  const pid_t first = spawn_lrahost(tiny(out) + " --set train.steps=1000000 --set train.eval_every=1000000",
                                    d.path() / "first.log");
  ASSERT_GT(first, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!fs::exists(out / "run.log") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(out / "run.log")) << read_text(d.path() / "first.log");
  auto second = lrahost(tiny(out));  // today: both run, the second's result replaces the first's
  EXPECT_EQ(second.code, 2) << second.output;
  EXPECT_TRUE(contains(second.output, "another lrahost (PID " + std::to_string(first) + ")")) << second.output;
  EXPECT_TRUE(contains(second.output, (out / ".lrahost.lock").string())) << second.output;

  kill(first, SIGKILL);  // its lock file stays behind, its flock does not
  int status = 0;
  waitpid(first, &status, 0);
  ASSERT_TRUE(fs::exists(out / ".lrahost.lock"));
  auto third = lrahost(tiny(out));
  ASSERT_EQ(third.code, 0) << third.output;
  EXPECT_TRUE(contains(third.output, "took over the stale lock")) << third.output;
  EXPECT_TRUE(contains(third.output, "of process " + std::to_string(first))) << third.output;
  EXPECT_TRUE(fs::exists(out / "result.json"));
}

// --- bad --out -----------------------------------------------------------------

TEST(OutputDir, AFileAnEmptyPathOrAPathUnderAFileIsAUsageError) {
  TempDir d;
  write_text(d.path() / "file", "x");
  for (const std::string& out : {(d.path() / "file").string(), std::string("''"), (d.path() / "file" / "sub").string()}) {
    for (const std::string& args :
         {"run --plugin transformer --task listops --preset smoke --out " + out,
          "leaderboard " + d.str() + " --out " + out, "bench --report x.json --out " + out,
          "suite --plugin transformer --tasks listops --out " + out,
          "sweep --plugins transformer --tasks listops --slurm --out " + out, "forget --compare x.json --out " + out}) {
      auto o = lrahost(args);
      EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
      EXPECT_FALSE(contains(o.output, "internal error")) << args << "\n" << o.output;
      EXPECT_TRUE(contains(o.output, "--out")) << args << "\n" << o.output;
    }
  }
}

TEST(OutputDir, AReadOnlyDirectoryIsAUsageError) {
  TempDir d;
  const fs::path ro = d.path() / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  write_text(ro / "probe", "x");
  const bool writable = fs::exists(ro / "probe");
  fs::permissions(ro, fs::perms::owner_all, fs::perm_options::add);
  if (writable) GTEST_SKIP() << "running as root: a read-only mode does not stop writes here (unit test "
                                "OutputSafety.BadOutputDirectoriesAreUsageErrors covers it for other users)";
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  auto o = lrahost(tiny(ro));
  fs::permissions(ro, fs::perms::owner_all, fs::perm_options::add);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "not writable")) << o.output;
}

// --- a full disk -----------------------------------------------------------------

TEST(DiskFull, AFailedModelWriteIsExit8AndKeepsThePreviousModel) {
  TempDir d;
  const fs::path first = d.path() / "first";
  auto ok = lrahost(tiny(first));
  ASSERT_EQ(ok.code, 0) << ok.output;
  const auto model_bytes = fs::file_size(first / "model.pt");
  const auto log_bytes = fs::file_size(first / "run.log");
  // A file-size limit (in KiB) below model.pt but above run.log: write() of
  // model.pt fails with EFBIG, as on a full disk.
  const auto limit_kib = model_bytes / 1024 / 2;
  ASSERT_GT(limit_kib * 1024, log_bytes + 4096) << "the tiny model is too small for this test";

  const fs::path out = d.path() / "second";
  fs::create_directories(out);
  write_text(out / "model.pt", "previous good model");
  auto o = lrahost(tiny(out), "ulimit -f " + std::to_string(limit_kib) + ";");
  EXPECT_EQ(o.code, 8) << o.output;  // not 134 (SIGABRT) or 153 (SIGXFSZ)
  EXPECT_TRUE(contains(o.output, "lrahost: error: cannot write '" + (out / "model.pt").string() + "'")) << o.output;
  EXPECT_TRUE(contains(o.output, "File too large")) << o.output;
  EXPECT_EQ(read_text(out / "model.pt"), "previous good model");
  EXPECT_FALSE(fs::exists(out / "result.json"));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp-")) << e.path();  // no partial file left
  EXPECT_TRUE(contains(read_text(out / "run.log"), "cannot write"));  // the error ends run.log too
}

TEST(DiskFull, AFailedCheckpointWriteIsExit8AndKeepsTheEarlierCheckpoint) {
  TempDir d;
  const fs::path first = d.path() / "first";
  const std::string ckpt = " --set train.checkpoint_every=4";
  auto ok = lrahost(tiny(first) + ckpt);
  ASSERT_EQ(ok.code, 0) << ok.output;
  const auto optimizer_bytes = fs::file_size(first / "checkpoints" / "step-8" / "optimizer.pt");
  const auto limit_kib = optimizer_bytes / 1024 / 2;  // optimizer.pt (two moments per parameter) is the largest
  const fs::path out = d.path() / "second";
  auto o = lrahost(tiny(out) + ckpt, "ulimit -f " + std::to_string(limit_kib) + ";");
  EXPECT_EQ(o.code, 8) << o.output;
  EXPECT_TRUE(contains(o.output, "File too large")) << o.output;
  EXPECT_FALSE(fs::exists(out / "checkpoints" / "step-4"));  // never published half-written
  EXPECT_FALSE(fs::exists(out / "result.json"));
}

// A real full or read-only file system, without root: a private mount
// namespace (unshare -rm) with a small tmpfs over the output folder. The
// mount lives only as long as the command, so the shell lists what was left
// in it before leaving. Skipped where user namespaces are not allowed.
bool private_mounts_available() {
  return std::system("unshare -rm sh -c 'mount -t tmpfs -o size=64k tmpfs /tmp' >/dev/null 2>&1") == 0;
}

// Runs lrahost ARGS with a tmpfs of `kib` KiB (read-only when `ro`) mounted
// on `mnt`; `before` runs first inside the mount (e.g. to leave a file there),
// and afterwards the folder's listing is printed after a "LISTING" line.
Outcome lrahost_on_tmpfs(const fs::path& mnt, std::uintmax_t kib, bool ro, const std::string& before,
                         const std::string& args) {
  fs::create_directories(mnt);
  const std::string m = mnt.string();
  std::string script = "mount -t tmpfs -o size=" + std::to_string(kib) + "k tmpfs " + m + " || exit 99; " +
                       before + (ro ? " mount -o remount,ro " + m + " || exit 99;" : "") +
                       " \"$0\" \"$@\"; rc=$?; echo LISTING; ls -a " + m + "; cat " + m +
                       "/model.pt 2>/dev/null; echo; exit $rc";
  return lrahost(args, "unshare -rm sh -c '" + script + "'");
}

TEST(DiskFull, ARealFullFileSystemIsExit8AndKeepsThePreviousModel) {
  if (!private_mounts_available()) GTEST_SKIP() << "unshare -rm (user and mount namespaces) is not allowed here";
  TempDir d;
  const fs::path first = d.path() / "first";
  auto ok = lrahost(tiny(first));
  ASSERT_EQ(ok.code, 0) << ok.output;
  const auto model_kib = fs::file_size(first / "model.pt") / 1024;
  const auto log_kib = fs::file_size(first / "run.log") / 1024;
  // Room for run.log, the lock file and the old model, not for the new model.pt.
  const auto size_kib = log_kib + 16 + model_kib / 2;
  ASSERT_GT(model_kib, 32u) << "the tiny model is too small for this test";
  const fs::path out = d.path() / "mnt";
  auto o = lrahost_on_tmpfs(out, size_kib, false, "printf \"previous good model\" > " + out.string() + "/model.pt;",
                            tiny(out));
  ASSERT_NE(o.code, 99) << "could not mount: " << o.output;
  EXPECT_EQ(o.code, 8) << o.output;  // not 134 (SIGABRT)
  EXPECT_TRUE(contains(o.output, "No space left on device")) << o.output;
  EXPECT_TRUE(contains(o.output, "cannot write '" + (out / "model.pt").string() + "'")) << o.output;
  const std::string listing = o.output.substr(o.output.rfind("LISTING"));
  EXPECT_TRUE(contains(listing, "previous good model")) << listing;  // the old file, intact
  EXPECT_FALSE(contains(listing, "result.json")) << listing;
  EXPECT_FALSE(contains(listing, ".tmp-")) << listing;                  // no partial file left
}

TEST(OutputDir, AReadOnlyFileSystemIsAUsageErrorEvenForRoot) {
  if (!private_mounts_available()) GTEST_SKIP() << "unshare -rm (user and mount namespaces) is not allowed here";
  TempDir d;
  const fs::path ro = d.path() / "ro";
  for (const std::string& out : {ro.string(), (ro / "new-run").string()}) {
    auto o = lrahost_on_tmpfs(ro, 64, true, "", tiny(out));
    ASSERT_NE(o.code, 99) << "could not mount: " << o.output;
    EXPECT_EQ(o.code, 2) << out << "\n" << o.output;
    EXPECT_TRUE(contains(o.output, "Read-only file system")) << o.output;
    EXPECT_FALSE(contains(o.output, "internal error")) << o.output;
  }
  auto r = lrahost(tiny(d.path() / "run"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto lb = lrahost_on_tmpfs(ro, 64, true, "", "leaderboard " + (d.path() / "run").string() + " --out " + ro.string());
  EXPECT_EQ(lb.code, 2) << lb.output;
  EXPECT_TRUE(contains(lb.output, "Read-only file system")) << lb.output;
}

TEST(AllOrNothing, ALeaderboardWhoseThirdFileCannotBeWrittenReplacesNoneOfTheOthers) {
  TempDir d;
  const fs::path run = d.path() / "run", site = d.path() / "site";
  auto r = lrahost(tiny(run));
  ASSERT_EQ(r.code, 0) << r.output;
  auto first = lrahost("leaderboard " + run.string() + " --out " + site.string() + " --title First");
  ASSERT_EQ(first.code, 0) << first.output;
  const std::string json = read_text(site / "leaderboard.json"), md = read_text(site / "leaderboard.md");
  fs::remove(site / "index.html");
  fs::create_directories(site / "index.html" / "keep");  // a directory where the page goes
  auto o = lrahost("leaderboard " + run.string() + " --out " + site.string() + " --title Second");
  EXPECT_EQ(o.code, 8) << o.output;
  EXPECT_TRUE(contains(o.output, (site / "index.html").string())) << o.output;
  EXPECT_EQ(read_text(site / "leaderboard.json"), json);  // today: already replaced by the second call's
  EXPECT_EQ(read_text(site / "leaderboard.md"), md);
  EXPECT_TRUE(fs::is_directory(site / "index.html" / "keep"));
  for (const auto& e : fs::directory_iterator(site))
    EXPECT_FALSE(contains(e.path().filename().string(), "staging")) << e.path();
}

// --- --resume --------------------------------------------------------------------

// A finished run with checkpoints at updates 4 and 8, its result removed so
// that it looks interrupted after update 8.
fs::path interrupted_run(const TempDir& d, const std::string& name) {
  const fs::path out = d.path() / name;
  auto o = lrahost(tiny(out) + " --set train.checkpoint_every=4");
  EXPECT_EQ(o.code, 0) << o.output;
  fs::remove(out / "result.json");
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step-4"));
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step-8"));
  return out;
}

std::string resume(const fs::path& out) { return tiny(out) + " --set train.checkpoint_every=4 --resume"; }

TEST(Resume, AppendsToRunLog) {
  TempDir d;
  const fs::path out = interrupted_run(d, "run");
  const std::string before = read_text(out / "run.log");
  auto o = lrahost(resume(out));
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string after = read_text(out / "run.log");
  EXPECT_EQ(after.substr(0, before.size()), before);  // the log before the interruption is kept
  EXPECT_TRUE(contains(after.substr(before.size()), "resumed from")) << after;
}

TEST(Resume, ACorruptNewestCheckpointFallsBackToTheOlderOneNamingIt) {
  TempDir d;
  const fs::path out = interrupted_run(d, "run");
  const auto model = out / "checkpoints" / "step-8" / "model.pt";
  fs::resize_file(model, fs::file_size(model) / 2);  // truncated, as by a crash of an older lrahost
  auto o = lrahost(resume(out));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "skipping checkpoint " + (out / "checkpoints" / "step-8").string())) << o.output;
  const auto r = nlohmann::json::parse(read_text(out / "result.json"));
  EXPECT_EQ(r["timing"]["resumed_from"], "step-4");
}

TEST(Resume, AStateStepBeyondTheManifestIsRefusedNotReplayed) {
  TempDir d;
  const fs::path out = interrupted_run(d, "run");
  for (const char* step : {"step-4", "step-8"}) {
    const fs::path state = out / "checkpoints" / step / "state.json";
    auto j = nlohmann::json::parse(read_text(state));
    j["step"] = 1e13;  // today: replays the data stream without bound
    write_text(state, j.dump());
  }
  auto o = lrahost(resume(out));
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_TRUE(contains(o.output, "not an integer in 1..12")) << o.output;
  EXPECT_TRUE(contains(o.output, "no intact checkpoint")) << o.output;

  // Only the newest bad: the older one is used, and the skip says why.
  const fs::path out2 = interrupted_run(d, "run2");
  const fs::path state = out2 / "checkpoints" / "step-8" / "state.json";
  auto j = nlohmann::json::parse(read_text(state));
  j["step"] = 1e13;
  write_text(state, j.dump());
  auto o2 = lrahost(resume(out2));
  ASSERT_EQ(o2.code, 0) << o2.output;
  EXPECT_TRUE(contains(o2.output, "skipping checkpoint " + (out2 / "checkpoints" / "step-8").string())) << o2.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(out2 / "result.json"))["timing"]["resumed_from"], "step-4");
}

TEST(Resume, ACheckpointFolderWithAHugeNumberIsIgnoredWithAWarning) {
  TempDir d;
  const fs::path out = d.path() / "run";
  fs::create_directories(out / "checkpoints" / "step-99999999999999999999");
  auto o = lrahost(tiny(out));
  ASSERT_EQ(o.code, 0) << o.output;  // today: "internal error: stoll"
  EXPECT_FALSE(contains(o.output, "stoll")) << o.output;
  EXPECT_TRUE(contains(o.output, "ignoring " + (out / "checkpoints" / "step-99999999999999999999").string()))
      << o.output;
}

// --- seeds ---------------------------------------------------------------------------

TEST(Seeds, OutsideZeroToTwoToThe63AreRefusedEverywhere) {
  TempDir d;
  for (const std::string& bad : {"-7", "99999999999999999999", "9223372036854775808", "1e3", "+5"}) {
    for (const std::string& args :
         {"run --plugin transformer --task listops --preset smoke --out " + d.str() + "/r --seed " + bad,
          "suite --plugin transformer --tasks listops --out " + d.str() + "/s --seeds 0," + bad,
          "sweep --plugins transformer --tasks listops --slurm --out " + d.str() + "/w --seeds " + bad,
          "forget --plugin transformer --preset smoke --out " + d.str() + "/f --seed " + bad,
          "span --run " + d.str() + " --seed " + bad, "data generate listops --out " + d.str() + "/g --seed " + bad}) {
      auto o = lrahost(args);
      EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
      EXPECT_TRUE(contains(o.output, "9223372036854775807")) << args << "\n" << o.output;  // says the range
    }
  }
  EXPECT_FALSE(fs::exists(d.path() / "r"));
  EXPECT_FALSE(fs::exists(d.path() / "w"));
}

TEST(Sets, AssignmentsThatAreNotUtf8AreUsageErrorsForManifestKeysAndMixerOptions) {
  // Found by fuzz/manifest_set: such bytes once made every later JSON dump
  // (result.json, checkpoints) fail with 'internal error'. A plugin's string
  // option (performer's kernel) must not pass them on either.
  TempDir d;
  for (const std::string set : {"train.lr=\"$(printf '\\377')\"", "mixer.kernel=\"$(printf 'a\\377')\""}) {
    auto o = lrahost("run --plugin performer --task listops --preset smoke --data-dir " + data_dir() + " --out " +
                     (d.path() / "run").string() + " --set " + set);
    EXPECT_EQ(o.code, 2) << set << "\n" << o.output;
    EXPECT_TRUE(contains(o.output, "not valid UTF-8")) << set << "\n" << o.output;
    EXPECT_FALSE(fs::exists(d.path() / "run" / "result.json"));
  }
}

TEST(Seeds, TheLargestSeedIsAccepted) {
  TempDir d;
  auto o = lrahost("sweep --plugins transformer --tasks listops --slurm --out " + d.str() +
                   "/w --seeds 9223372036854775807");
  ASSERT_EQ(o.code, 0) << o.output;
  const auto plan = nlohmann::json::parse(read_text(d.path() / "w" / "sweep.json"));
  EXPECT_EQ(plan["entries"][0]["seed"].get<int64_t>(), INT64_MAX);
}

// --- sweep and suite -------------------------------------------------------------------

TEST(Sweep, RunNamesAreUniquePerPluginFileAndPathsAbsolute) {
  TempDir d;
  fs::create_directories(d.path() / "x");
  fs::copy_file(std::string(LRA_PLUGIN_DIR) + "/lra_mixer_transformer.so", d.path() / "x" / "transformer.so");
  // A relative path, from another working directory: stored absolute.
  auto o = lrahost("sweep --plugins transformer,x/transformer.so --tasks listops --seeds 0 --slurm --out w",
                   "cd " + d.str() + " &&");
  ASSERT_EQ(o.code, 0) << o.output;
  const auto plan = nlohmann::json::parse(read_text(d.path() / "w" / "sweep.json"));
  ASSERT_EQ(plan["entries"].size(), 2u);
  EXPECT_EQ(plan["entries"][0]["plugin"], "transformer");
  EXPECT_EQ(plan["entries"][1]["plugin"], (d.path() / "x" / "transformer.so").string());
  EXPECT_NE(plan["entries"][0]["out"], plan["entries"][1]["out"]);
  EXPECT_EQ(plan["entries"][1]["out"], (d.path() / "w" / "runs" / "listops-transformer-2-seed0").string());

  auto twice = lrahost("sweep --plugins transformer,transformer --tasks listops --slurm --out " + d.str() + "/w2");
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_TRUE(contains(twice.output, "appears twice")) << twice.output;
}

TEST(Sweep, ExitsWithTheFirstFailedRunsCode) {
  TempDir d;
  // Every run fails its manifest check (train.steps = 0): exit 4, and so the sweep.
  auto o = lrahost("sweep --plugins transformer --tasks listops --seeds 0,1 --preset smoke --set train.steps=0 --out " +
                   d.str() + "/w");
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_TRUE(contains(o.output, "2 of 2 runs failed")) << o.output;
}

TEST(Sweep, ARunFolderOfAnotherPluginIsNotThisEntryDone) {
  TempDir d;
  auto plan = lrahost("sweep --plugins linear_transformer --tasks listops --seeds 0 --preset smoke --slurm --out " +
                      d.str() + "/w");
  ASSERT_EQ(plan.code, 0) << plan.output;
  const auto entry = nlohmann::json::parse(read_text(d.path() / "w" / "sweep.json"))["entries"][0];
  auto other = lrahost(tiny(entry["out"].get<std::string>()));  // a transformer run in its folder
  ASSERT_EQ(other.code, 0) << other.output;
  auto o = lrahost("sweep --run-index 0 " + d.str() + "/w");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "is a run of plugin 'transformer'")) << o.output;
}

TEST(Suite, RefusesASecondPluginInOneDirectoryNamingBoth) {
  TempDir d;
  const std::string rest = " --tasks listops --seeds 0 --preset smoke --set train.steps=0 --out " + d.str() + "/s";
  auto first = lrahost("suite --plugin transformer" + rest);
  EXPECT_EQ(first.code, 4) << first.output;  // its run failed (train.steps = 0)
  // As if interrupted before its summary: continued by running it again.
  fs::remove(d.path() / "s" / "suite.json");
  fs::remove(d.path() / "s" / "suite.md");
  auto other = lrahost("suite --plugin linear_transformer" + rest);
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_TRUE(contains(other.output, "'transformer'")) << other.output;
  EXPECT_TRUE(contains(other.output, "'linear_transformer'")) << other.output;
  auto same = lrahost("suite --plugin transformer" + rest);
  EXPECT_EQ(same.code, 4) << same.output;  // the same plugin continues
}

}  // namespace
}  // namespace lra::test
