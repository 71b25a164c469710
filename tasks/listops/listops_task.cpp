// The built-in ListOps task: LRA release files when the parameters are the
// LRA defaults and the files are present, otherwise a generated, cached dataset.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "generator.h"
#include "lra/task.h"
#include "task_util.h"
#include "tsv_reader.h"

namespace {

namespace fs = std::filesystem;
using namespace lra;
using listops::GeneratorParams;
using listops::SplitSizes;

const char* const kFiles[3] = {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"};

std::vector<OptionSpec> option_specs() {
  return {
      {"train_size", int64_t{96000}, "training examples"},
      {"val_size", int64_t{2000}, "validation examples"},
      {"test_size", int64_t{2000}, "test examples"},
      {"min_length", int64_t{500}, "generator: keep trees with min_length < length < max_length"},
      {"max_length", int64_t{2000}, "generator: see min_length; also the task's natural length"},
      {"max_depth", int64_t{10}, "generator: maximum tree depth"},
      {"max_args", int64_t{10}, "generator: maximum operands per operator"},
      {"seed", int64_t{0}, "generator seed (the LRA release files have none)"},
  };
}

struct Config {
  SplitSizes sizes;
  GeneratorParams gen;
  int64_t seed = 0;
};

Config read_config(const Params& given) {
  Params params;  // defaults first, so a partial map still works
  for (const auto& s : option_specs()) params[s.name] = s.default_value;
  for (const auto& [k, v] : given) params[k] = v;
  ParamReader r(params, "listops [data]");
  Config c;
  c.sizes = {r.get_int("train_size"), r.get_int("val_size"), r.get_int("test_size")};
  c.gen = {r.get_int("min_length"), r.get_int("max_length"), r.get_int("max_depth"), r.get_int("max_args")};
  c.seed = r.get_int("seed");
  if (c.sizes.train < 1 || c.sizes.val < 1 || c.sizes.test < 1)
    throw Error(ErrorKind::rules, "listops [data]: train_size, val_size and test_size must all be >= 1 (got " +
                                      std::to_string(c.sizes.train) + ", " + std::to_string(c.sizes.val) + ", " +
                                      std::to_string(c.sizes.test) + ")");
  listops::validate(c.gen);
  return c;
}

bool is_lra_default(const Config& c) {
  const GeneratorParams d;
  return c.sizes.train == 96000 && c.sizes.val == 2000 && c.sizes.test == 2000 && c.gen.min_length == d.min_length &&
         c.gen.max_length == d.max_length && c.gen.max_depth == d.max_depth && c.gen.max_args == d.max_args;
}

// Everything that determines the generated files; its hash names the cache folder.
// Bump "v1" whenever the generator's output changes.
std::string canonical(const Config& c) {
  return "lrahost listops generator v1\ntrain_size=" + std::to_string(c.sizes.train) +
         "\nval_size=" + std::to_string(c.sizes.val) + "\ntest_size=" + std::to_string(c.sizes.test) +
         "\nmin_length=" + std::to_string(c.gen.min_length) + "\nmax_length=" + std::to_string(c.gen.max_length) +
         "\nmax_depth=" + std::to_string(c.gen.max_depth) + "\nmax_args=" + std::to_string(c.gen.max_args) +
         "\nseed=" + std::to_string(c.seed) + "\n";
}

bool any_file(const fs::path& dir) {
  for (const char* f : kFiles)
    if (fs::exists(dir / f)) return true;
  return false;
}

std::string count_text(int64_t n, const char* what) { return std::to_string(n) + " " + what; }

// Reads the three splits of `dir`; `remedy` tells the user how to repair a bad folder.
// `expect` null: accept whatever counts the files hold (lrahost data check).
// `partial_ok` (LRA's release layout): other counts are said in the source,
// and the host opens an official run on them, naming the counts; in the
// host's own generated cache they mean a damaged folder.
// Returns how many examples lie outside LRA's generator bounds, and the first.
std::pair<int64_t, std::string> read_folder(const fs::path& dir, const SplitSizes* expect, const std::string& remedy,
                                            Dataset* out, bool partial_ok = false) {
  std::string missing;
  for (const char* f : kFiles)
    if (!fs::is_regular_file(dir / f)) missing += (missing.empty() ? "" : ", ") + (dir / f).string();
  if (!missing.empty())
    throw Error(ErrorKind::data, "listops: incomplete dataset folder " + dir.string() + ", missing " + missing + "; " +
                                     remedy);
  Split* splits[3] = {&out->train, &out->val, &out->test};
  const int64_t want[3] = {expect ? expect->train : -1, expect ? expect->val : -1, expect ? expect->test : -1};
  int64_t oov = 0, mismatches = 0;
  std::pair<int64_t, std::string> outside{0, ""};
  std::string notes;
  for (int s = 0; s < 3; ++s) {
    const std::string path = (dir / kFiles[s]).string();
    listops::ReadReport rep;
    try {
      *splits[s] = listops::read_tsv(path, &rep);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string(e.what()) + " (" + remedy + ")");
    }
    if (expect && rep.examples != want[s]) {
      if (!partial_ok)
        throw Error(ErrorKind::data, "listops: " + path + " holds " + count_text(rep.examples, "examples") +
                                         ", expected " + std::to_string(want[s]) + " (truncated file?); " + remedy);
      notes += "; NOT the full dataset: " + std::string(kFiles[s]) + " holds " + count_text(rep.examples, "examples") +
               " of " + std::to_string(want[s]);
    }
    if (rep.oov_tokens && notes.find("first unknown") == std::string::npos)
      notes += "; first unknown token at " + rep.first_oov;
    if (rep.label_mismatches && notes.find("first label") == std::string::npos)
      notes += "; first label mismatch at " + rep.first_mismatch;
    oov += rep.oov_tokens;
    mismatches += rep.label_mismatches;
    if (rep.outside_lra_bounds && outside.first == 0) outside.second = rep.first_outside_lra_bounds;
    outside.first += rep.outside_lra_bounds;
  }
  if (oov) out->source += ", " + count_text(oov, "unknown tokens mapped to <oov>");
  if (mismatches) out->source += ", " + count_text(mismatches, "targets differ from the evaluated expression");
  out->source += notes;
  return outside;
}

class ListOpsTask final : public TaskPlugin {
 public:
  Status data_options(std::vector<OptionSpec>* out) const noexcept override {
    return guarded([&] { *out = option_specs(); });
  }

  Status load(const DataRequest& request, Dataset* out) const noexcept override {
    return guarded([&] {
      const Config c = read_config(request.params);
      const fs::path root = request.data_root.empty() ? fs::path(".") : fs::path(request.data_root);
      *out = Dataset{};
      out->info.vocab_size = listops::kVocabSize;
      out->info.num_classes = listops::kNumClasses;
      out->info.natural_len = c.gen.max_length;
      out->info.paired = false;
      out->info.vocabulary = listops::vocabulary();

      if (is_lra_default(c)) {
        for (const fs::path& dir : {root, root / "listops-1000", root / "lra_release" / "listops-1000",
                                    root / "lra_release" / "lra_release" / "listops-1000"}) {
          if (!any_file(dir)) continue;
          out->source = std::string(lra::kLraReleaseSource) + " at " + dir.string() + " (the seed does not apply)";
          const auto outside = read_folder(dir, request.enforce_sizes ? &c.sizes : nullptr,
                                           "replace them with the files of lra_release/listops-1000", out,
                                           /*partial_ok=*/true);
          // Files in the release's layout that LRA's generator cannot have
          // written are not its release: said, and no longer taken for it
          // (the host then checks them as any other data).
          if (outside.first > 0)
            out->source = "ListOps files in LRA's release layout that are NOT LRA's release: " +
                          lra::tasks::with_commas(outside.first) + " examples outside its generator's bounds (500 < "
                          "length < 2000 tokens, depth <= 10, 2..10 operands), first " + outside.second +
                          out->source.substr(std::string(lra::kLraReleaseSource).size());
          return;
        }
      }
      const fs::path dir = root / "listops" / ("gen-" + lra::tasks::fnv1a64_hex(canonical(c)));
      const std::string remedy = "delete " + dir.string() + " to have it regenerated";
      if (!any_file(dir)) {
        if (!request.allow_generate) {
          std::string msg = "listops: no dataset for these parameters. Expected " + (dir / kFiles[0]).string() + ", " +
                            (dir / kFiles[1]).string() + " and " + (dir / kFiles[2]).string();
          if (is_lra_default(c))
            msg += ", or the LRA release files basic_{train,val,test}.tsv in " + root.string() + ", " +
                   (root / "listops-1000").string() + " or " + (root / "lra_release" / "listops-1000").string();
          throw Error(ErrorKind::data, msg + ". Run a training command (it generates them) or point --data-dir "
                                             "at a folder holding them.");
        }
        auto examples = listops::generate(c.gen, c.sizes.total(), static_cast<uint64_t>(c.seed), request.threads);
        listops::write_dataset(dir.string(), examples, c.sizes, canonical(c));
      }
      out->source = "generated by the lrahost ListOps generator at " + dir.string() + " (seed " +
                    std::to_string(c.seed) + ", lengths (" + std::to_string(c.gen.min_length) + ", " +
                    std::to_string(c.gen.max_length) + "), depth " + std::to_string(c.gen.max_depth) + ", args " +
                    std::to_string(c.gen.max_args) + ")";
      read_folder(dir, request.enforce_sizes ? &c.sizes : nullptr, remedy, out);
    });
  }

  Status generate(const std::string& out_dir, const Params& params, int64_t total, uint64_t seed,
                  int threads) const noexcept override {
    return guarded([&] {
      const Config c = read_config(params);
      const GeneratorParams& gen = c.gen;
      if (total <= 0) total = c.sizes.total();
      if (total < 50)
        throw Error(ErrorKind::usage, "listops: " + std::to_string(total) +
                                          " examples are too few: the 96/2/2 split needs at least 50");
      auto examples = listops::generate(gen, total, seed, threads);
      listops::write_dataset(out_dir, examples, listops::default_split(total));
    });
  }
};

}  // namespace

LRA_TASK_PLUGIN("listops", "1.0.0",
                "ListOps (LRA): nested MIN/MAX/MED/SM expressions, 10 classes; release TSVs or seeded generator",
                ListOpsTask)
