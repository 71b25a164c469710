// `lrahost leaderboard`: result files (verified) and bench measurements into
// a static site: index.html, leaderboard.md, leaderboard.json.
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/build_info.h"
#include "leaderboard/board.h"
#include "leaderboard/site.h"
#include "lra/status.h"
#include "runs/official_registry.h"
#include "manifest/presets.h"
#include "plugins/loader.h"
#include "results/signature.h"

namespace lra::host {

int leaderboard_command(const LeaderboardArgs& a) {
  namespace fs = std::filesystem;
  const fs::path out = a.out;
  std::error_code ec;
  // The verifier keys first: a bad folder is exit 2 before anything is created.
  std::map<std::string, std::string> verifiers;
  if (a.trusted_verifiers) verifiers = load_trusted_keys(*a.trusted_verifiers, "--trusted-verifiers");
  // One writer at a time (common/dir_lock.h); created now, removed again when
  // the command fails before writing (an unreadable result, a bad --bench).
  const DirLock lock(out);
  std::vector<fs::path> bench;
  for (const auto& b : a.bench) {
    if (!fs::is_regular_file(b, ec))
      throw Error(ErrorKind::usage, "--bench " + b + ": no such file (pass bench.json files written by lrahost bench)");
    bench.emplace_back(b);
  }

  // Everything is read, checked and rendered before the first file is written.
  BaselineInputs baselines;
  try {
    if (!a.baselines.empty()) baselines.files = collect_result_files({a.baselines.begin(), a.baselines.end()});
  } catch (const Error& e) {
    throw Error(e.kind(), "--baselines: " + std::string(e.what()));
  }
  if (!baselines.files.empty()) baselines.builtin_mixers = builtin_mixer_names();
  Leaderboard board = build_leaderboard(collect_result_files({a.results.begin(), a.results.end()}), bench, registry_official,
                                        registry_trial_seeds, verifiers, baselines);
  board.title = a.title;
  const BuildInfo& info = build_info();
  board.generator = "lrahost " + info.version + " (" + info.git_revision.substr(0, 12) + (info.git_dirty ? ", dirty" : "") + ")";
  const std::string html = leaderboard_html(board);
  const std::string md = leaderboard_markdown(board);
  const std::string json = leaderboard_json(board).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";

  // The three files all or none: staged beside the site, then swapped in (common/atomic_file.h).
  write_files_atomic(out, {{"leaderboard.json", json}, {"leaderboard.md", md}, {"index.html", html}});

  auto counted = [](std::size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  std::printf("leaderboard: %s -> %zu closed, %zu self-pretrained and %s open%s, %s%s\n",
              counted(board.result_files, "result file", "result files").c_str(), board.closed.size(),
              board.self_pretrained.size(),
              counted(board.open.size(), "entry", "entries").c_str(),
              board.open_baselines.empty()
                  ? ""
                  : (" (and " + counted(board.open_baselines.size(), "baseline", "baselines") + ")").c_str(),
              counted(board.invalid.size(), "invalid result", "invalid results").c_str(),
              board.bench_sources.empty() ? "" : ", with the speed/accuracy/memory chart");
  for (const auto& sec : board.suites)
    if (!sec.empty())
      std::printf("  %s (%s): %zu closed and %s open%s\n", sec.suite.c_str(), sec.protocol.c_str(), sec.closed.size(),
                  counted(sec.open.size(), "entry", "entries").c_str(),
                  sec.open_baselines.empty()
                      ? ""
                      : (" (and " + counted(sec.open_baselines.size(), "baseline", "baselines") + ")").c_str());
  for (const auto& r : board.invalid)
    std::printf("  invalid: %s (%s)\n", r.source.c_str(), r.reasons.empty() ? "" : r.reasons.front().c_str());
  if (verifiers.empty())
    std::printf("  no --trusted-verifiers: every reevaluation.json is shown as unverified and not counted\n");
  std::printf("written: %s, leaderboard.md, leaderboard.json\n", (out / "index.html").c_str());
  return 0;
}

void add_leaderboard_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<LeaderboardArgs>();
  auto* lbc = app.add_subcommand("leaderboard", "Build the leaderboard site (index.html, leaderboard.md, "
                                                "leaderboard.json) from result files");
  lbc->add_option("results", a->results, "result.json files or directories")->required();
  lbc->add_option("--out", a->out, "Output directory")->required();
  lbc->add_option("--bench", a->bench, "bench.json files: adds the speed/accuracy/memory chart");
  lbc->add_option("--title", a->title, "Page title");
  lbc->add_option("--baselines", a->baselines,
                  "Result files or directories of built-in mixers measured by this host (e.g. "
                  "docs/measured/cpu/baselines): the open division's reference rows, verified, not ranked");
  lbc->add_option("--trusted-verifiers", a->trusted_verifiers,
                  "Folder of Ed25519 public keys (*.pem) of the maintainers whose signed reevaluation.json counts "
                  "(re-evaluated, private set); other reports are shown as unverified");
  on_parsed(lbc, slot, a, [](LeaderboardArgs& args) { return leaderboard_command(args); });
}

}  // namespace lra::host
