// forgetting/forget_documents.cpp — see forget_documents.h; and --compare.
#include "forgetting/forget_documents.h"

#include <algorithm>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "forgetting/plot_svg.h"
#include "forgetting/samples.h"
#include "lra/status.h"
#include "model/causal_lm.h"
#include "plugins/descriptor.h"

namespace lra::host::forgetting {
namespace fs = std::filesystem;

MeasureSettings measure_settings(const Manifest& m) {
  static const std::vector<std::string> known = {"corpus",  "test_max_length", "granularity", "granularity_type",
                                                 "repeats", "sample_seed",     "document_bos"};
  ParamReader d(m.data, m.source + " [data]");
  for (const auto& [k, v] : m.data)
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw Error(ErrorKind::rules, m.source + ": unknown key 'data." + k + "' for task \"forgetting\" (valid keys: "
                                        "corpus, test_max_length, granularity, granularity_type, repeats, sample_seed, document_bos)");
  MeasureSettings s;
  s.corpus = d.get_string("corpus");
  s.max_length = d.get_int("test_max_length");
  s.granularity = d.get_int("granularity");
  s.granularity_type = d.get_string("granularity_type");
  s.repeats = d.get_int("repeats");
  s.seed = static_cast<uint64_t>(d.get_int("sample_seed"));
  if (d.has("document_bos")) s.document_bos = d.get_bool("document_bos");
  return s;
}

MeasureConfig measure_config(const ForgetArgs& a, const MeasureSettings& s, int64_t bos, int64_t eos) {
  MeasureConfig c;
  c.max_length = a.max_len.value_or(s.max_length);
  c.granularity = a.granularity.value_or(s.granularity);
  c.granularity_type = a.granularity_type.value_or(s.granularity_type);
  c.repeats = a.repeats.value_or(s.repeats);
  c.samples = {bos, eos, a.seed ? static_cast<uint64_t>(*a.seed) : s.seed};
  if (a.batch_tokens > 0) c.batch_tokens = a.batch_tokens;
  test_lengths(c.max_length, c.granularity, c.granularity_type);  // bad values fail before any work
  if (c.repeats < 1) throw Error(ErrorKind::usage, "--repeats " + std::to_string(c.repeats) + ": expected at least 1");
  return c;
}

std::vector<int32_t> bytes_to_ids(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

nlohmann::json corpus_json(const Corpus& c) {
  return {{"name", c.name},
          {"source", c.source},
          {"sha256", c.sha256},
          {"split_rule", c.split_rule},
          {"train_bytes", c.train.size()},
          {"test_bytes", c.test.size()},
          {"train_documents", c.train_documents},
          {"test_documents", c.test_documents},
          {"tokenization", "bytes (id = byte value)"}};
}

nlohmann::json trained_corpus_json(const Corpus& c, int64_t train_tokens, int64_t held_out_tokens) {
  nlohmann::json j = corpus_json(c);
  j["tokenization"] =
      "bytes (id = byte value); training and held-out streams: bos (" + std::to_string(kByteBos) +
      ") before each document; evaluation samples: the test part's bytes, bos only as the layouts' separator";
  j["train_tokens"] = train_tokens;
  j["held_out_tokens"] = held_out_tokens;
  return j;
}

nlohmann::json config_json(const MeasureConfig& c, int64_t train_length, const std::string& precision) {
  nlohmann::json lengths = test_lengths(c.max_length, c.granularity, c.granularity_type);
  return {{"train_length", train_length},
          {"max_length", c.max_length},
          {"granularity", c.granularity},
          {"granularity_type", c.granularity_type},
          {"repeats", c.repeats},
          {"sample_seed", c.samples.seed},
          {"bos", c.samples.bos},
          {"eos", c.samples.eos},
          {"lengths", lengths},
          {"scored_tokens", "last ceil(L/2) tokens of the second S"},
          {"irrelevant_text", "an L-token window of the second half of the evaluation text, per repetition"},
          {"memory_rule", "fine_length: the largest tested length with copy_mean > 0.99; coarse_length: the largest "
                          "with copy_mean - lm_mean > 0.01 (Table 3); *_prefix: the condition holds at every tested "
                          "length up to it; a failed length never holds"},
          {"precision", precision}};
}

nlohmann::json host_json() {
  return {{"version", build_info().version},
          {"git_revision", build_info().git_revision},
          {"git_dirty", build_info().git_dirty},
          {"torch_version", host_descriptor().torch_version},
          {"build_type", build_info().build_type},
          {"compiler", build_info().compiler}};
}

void log_point(spdlog::logger& log, const CurvePoint& p, size_t i, size_t n) {
  if (!p.ok())
    log.warn("length {:>6} ({}/{}): FAILED: {}", p.length, i + 1, n, p.error);
  else
    log.info("length {:>6} ({}/{}): copy {:.4f} ± {:.4f}   LM {:.4f} ± {:.4f}   p {:.3g}", p.length, i + 1, n,
             p.copy_mean, p.copy_std, p.lm_mean, p.lm_std, p.p_value);
}

fs::path prepare_out(const std::string& out) {
  const fs::path dir(out);
  if (fs::exists(dir / "forgetting.json"))
    throw Error(ErrorKind::usage, "output directory " + dir.string() + " already holds a forgetting.json; choose another --out");
  return dir;
}

void write_forgetting(const fs::path& out, const Curve& curve, nlohmann::json doc, bool log_x) {
  auto summary = curve_summary_json(curve);
  for (auto& [k, v] : summary.items()) doc[k] = v;
  // Both or neither (common/atomic_file.h).
  write_files_atomic(out, {{"forgetting.json", doc.dump(2) + "\n"},
                           {"forgetting.svg", forgetting_svg(curve, {curve.label, log_x})}});
}

// Every file is read and checked before anything is written. The memory
// lengths are always recomputed from the points by the current rules.
ComparedCurves compare_curves(const ForgetArgs& a) {
  ComparedCurves r;
  for (const auto& f : a.compare) r.loaded.push_back(load_curve_file(f));
  const fs::path out = a.out;
  if (fs::exists(out / "compare.svg"))
    throw Error(ErrorKind::usage, "output directory " + out.string() + " already holds a compare.svg; choose another --out");
  std::vector<Curve> curves;
  for (const auto& l : r.loaded) curves.push_back(l.curve);
  const std::string svg = compare_svg(curves, {a.title.value_or(""), a.log_x});
  fs::create_directories(out);
  r.svg = out / "compare.svg";
  write_file_atomic(r.svg, svg);
  return r;
}

}  // namespace lra::host::forgetting
