// `lrahost curves RUN... --out DIR`: the learning curves of finished runs
// overlaid (curves/learning_curves.h): DIR/curves.svg, and DIR/curves.csv
// with every run's history, one row per report, the run's result file first.
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/json_file.h"
#include "curves/learning_curves.h"
#include "lra/status.h"
#include "results/verify.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

struct CurvesArgs {
  std::vector<std::string> runs;
  std::string out, title = "Learning curves";
};

// The CSV field as RFC 4180 writes it: quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

int curves_command(const CurvesArgs& a) {
  check_output_dir_argument(a.out);
  std::vector<fs::path> inputs(a.runs.begin(), a.runs.end());
  const auto files = collect_result_files(inputs);  // a missing path or an empty folder: exit 2
  std::vector<LearningCurve> curves;
  std::string csv = "run,label,step,lr,train_loss,train_accuracy,val_loss,val_accuracy,steps_per_second\n";
  for (const auto& f : files) {
    // Unreadable or malformed: exit 5, nothing written.
    const LearningCurve c = learning_curve(read_json_file(f, ErrorKind::data, "result.json"), f.string());
    const std::string rows = history_csv(c);
    std::istringstream lines(rows.substr(rows.find('\n') + 1));
    for (std::string line; std::getline(lines, line);)
      csv += csv_field(f.string()) + "," + csv_field(c.label) + "," + line + "\n";
    curves.push_back(c);
  }
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw Error(ErrorKind::storage, storage_failure(a.out, "cannot create the folder", ec.value()));
  write_files_atomic(a.out, {{"curves.csv", csv}, {"curves.svg", curves_svg(curves, a.title)}});
  std::printf("%zu run%s: %s, %s\n", curves.size(), curves.size() == 1 ? "" : "s",
              (fs::path(a.out) / "curves.svg").c_str(), (fs::path(a.out) / "curves.csv").c_str());
  return 0;
}

}  // namespace

void add_curves_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<CurvesArgs>();
  auto* c = app.add_subcommand("curves", "Overlay the learning curves of finished runs (curves.svg, curves.csv)");
  c->add_option("runs", a->runs, "Run directories, folders holding them, or result.json files")->required();
  c->add_option("--out", a->out, "Folder for curves.svg and curves.csv")->required();
  c->add_option("--title", a->title, "The plot's title");
  on_parsed(c, slot, a, [](CurvesArgs& args) { return curves_command(args); });
}

}  // namespace lra::host
