// `lrahost recall RUN... --out DIR`: what researchers paste from sequence-task
// runs (recall/recall_report.h): DIR/recall.md (accuracy per cell, examples
// wholly right, state sizes) and DIR/recall.svg (accuracy against the
// measured state, one point per mixer and width).
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/json_file.h"
#include "lra/status.h"
#include "recall/recall_report.h"
#include "results/verify.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

struct RecallArgs {
  std::vector<std::string> runs;
  std::string out, title = "Recall against state size";
};

int recall_command(const RecallArgs& a) {
  check_output_dir_argument(a.out);
  std::vector<fs::path> inputs(a.runs.begin(), a.runs.end());
  const auto files = collect_result_files(inputs);  // a missing path or an empty folder: exit 2
  std::vector<RecallRun> runs;
  for (const auto& f : files)  // unreadable, malformed or not a sequence task's: exit 5, nothing written
    runs.push_back(read_recall_run(read_json_file(f, ErrorKind::data, "result.json"), f.string()));
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw Error(ErrorKind::storage, storage_failure(a.out, "cannot create the folder", ec.value()));
  write_files_atomic(a.out, {{"recall.md", recall_markdown(runs)}, {"recall.svg", recall_svg(runs, a.title)}});
  std::printf("%zu run%s: %s, %s\n", runs.size(), runs.size() == 1 ? "" : "s", (fs::path(a.out) / "recall.md").c_str(),
              (fs::path(a.out) / "recall.svg").c_str());
  return 0;
}

}  // namespace

void add_recall_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<RecallArgs>();
  auto* c = app.add_subcommand("recall", "Accuracy per cell and against the measured state size of sequence-task "
                                         "runs such as mqar (recall.md, recall.svg)");
  c->add_option("runs", a->runs, "Run directories, folders holding them, or result.json files")->required();
  c->add_option("--out", a->out, "Folder for recall.md and recall.svg")->required();
  c->add_option("--title", a->title, "The plot's title");
  on_parsed(c, slot, a, [](RecallArgs& args) { return recall_command(args); });
}

}  // namespace lra::host
