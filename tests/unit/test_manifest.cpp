#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "manifest/embedded.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "manifest/suites.h"

namespace lra::host {
namespace {

const char* kSource = "test.toml";

// The official ListOps manifest text (embedded copy).
std::string official_text() {
  const EmbeddedFile* f = find_official("listops");
  EXPECT_NE(f, nullptr);
  return f ? std::string(f->text) : std::string();
}

// Replaces exactly one occurrence of `from` (the test fails if absent).
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "'" << from << "' not in the manifest";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// Runs fn, expects lra::Error of `kind` whose message contains every needle.
std::string expect_error(const std::function<void()>& fn, ErrorKind kind,
                         const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected lra::Error, got std::exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an error containing '" << (needles.empty() ? "" : needles[0]) << "'";
  return {};
}

std::string expect_rules(const std::string& text, std::vector<std::string> needles) {
  needles.insert(needles.begin(), kSource);
  return expect_error([&] { parse_manifest(text, kSource); }, ErrorKind::rules, needles);
}

// Removes the line that starts with `prefix`.
std::string remove_line(std::string text, const std::string& prefix) {
  auto pos = text.find("\n" + prefix);
  EXPECT_NE(pos, std::string::npos) << "no line starting with '" << prefix << "'";
  if (pos != std::string::npos) text.erase(pos + 1, text.find('\n', pos + 1) - pos);
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------------------
// Embedded manifests and presets

TEST(Manifest, OfficialListOps) {
  Manifest m = load_preset("listops", "official");
  EXPECT_EQ(m.schema, "lrahost.manifest/v1");
  EXPECT_EQ(m.name, "lra-v1/listops");
  EXPECT_EQ(m.task, "listops");
  EXPECT_FALSE(m.description.empty());
  EXPECT_EQ(m.source, "builtin:lra-v1/listops.toml");
  EXPECT_EQ(m.text, official_text());
  EXPECT_TRUE(m.overrides.empty());

  EXPECT_EQ(m.model.layers, 4);
  EXPECT_EQ(m.model.d_model, 512);
  EXPECT_EQ(m.model.heads, 8);
  EXPECT_EQ(m.model.qkv_dim, 512);
  EXPECT_EQ(m.model.ffn_dim, 1024);
  EXPECT_DOUBLE_EQ(m.model.dropout, 0.1);
  EXPECT_DOUBLE_EQ(m.model.attention_dropout, 0.1);
  EXPECT_EQ(m.model.pooling, "cls");
  EXPECT_EQ(m.model.positions, "sinusoidal");
  EXPECT_EQ(m.model.max_len, 2000);

  EXPECT_EQ(m.train.steps, 5000);
  EXPECT_EQ(m.train.batch_size, 32);
  EXPECT_DOUBLE_EQ(m.train.lr, 0.05);
  EXPECT_EQ(m.train.schedule, "constant*linear_warmup*rsqrt_decay");
  EXPECT_EQ(m.train.warmup, 1000);
  EXPECT_EQ(m.train.steps_per_cycle, 100000);
  EXPECT_DOUBLE_EQ(m.train.weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(m.train.beta1, 0.9);
  EXPECT_DOUBLE_EQ(m.train.beta2, 0.98);
  EXPECT_DOUBLE_EQ(m.train.eps, 1e-9);
  EXPECT_DOUBLE_EQ(m.train.grad_clip, 0.0);
  EXPECT_EQ(m.train.eval_every, 50);
  EXPECT_EQ(m.train.checkpoint_every, 10000);
  EXPECT_EQ(m.train.seed, 0);
  EXPECT_EQ(m.train.eval_batch_size, 32);

  const lra::Params want = {{"train_size", int64_t{96000}}, {"val_size", int64_t{2000}},
                            {"test_size", int64_t{2000}},   {"min_length", int64_t{500}},
                            {"max_length", int64_t{2000}},  {"max_depth", int64_t{10}},
                            {"max_args", int64_t{10}},      {"seed", int64_t{0}}};
  EXPECT_EQ(m.data, want);
  EXPECT_DOUBLE_EQ(m.rules.param_budget_ratio, 1.1);
}

TEST(Manifest, SmokeListOps) {
  Manifest m = load_preset("listops", "smoke");
  EXPECT_EQ(m.name, "smoke/listops");
  EXPECT_EQ(m.task, "listops");
  EXPECT_EQ(m.source, "builtin:smoke/listops.toml");
  EXPECT_EQ(m.model.layers, 2);
  EXPECT_EQ(m.model.d_model, 128);
  EXPECT_EQ(m.model.heads, 4);
  EXPECT_EQ(m.model.qkv_dim, 128);
  EXPECT_EQ(m.model.ffn_dim, 256);
  EXPECT_EQ(m.model.pooling, "cls");
  EXPECT_EQ(m.model.max_len, 64);
  EXPECT_EQ(m.train.steps, 2000);
  EXPECT_EQ(m.train.batch_size, 32);
  EXPECT_EQ(m.train.schedule, "constant*linear_warmup*rsqrt_decay");
  EXPECT_EQ(m.train.warmup, 150);
  EXPECT_DOUBLE_EQ(m.train.beta1, 0.9);
  EXPECT_DOUBLE_EQ(m.train.beta2, 0.98);
  EXPECT_DOUBLE_EQ(m.train.eps, 1e-9);
  // Peak LR (at s = warmup) within the intended 1e-3 ... 2e-3.
  const double peak = m.train.lr / std::sqrt(static_cast<double>(m.train.warmup));
  EXPECT_GE(peak, 1e-3);
  EXPECT_LE(peak, 2e-3);
  EXPECT_EQ(std::get<int64_t>(m.data.at("train_size")), 8000);
  EXPECT_EQ(std::get<int64_t>(m.data.at("max_length")), 64);
  EXPECT_LE(std::get<int64_t>(m.data.at("max_length")), m.model.max_len);
  EXPECT_DOUBLE_EQ(m.rules.param_budget_ratio, 1.1);
  // The smoke text is not the official one.
  EXPECT_FALSE(is_official_text("listops", m.text));
}

TEST(Manifest, EveryEmbeddedFileParsesAndMatchesTheSourceTree) {
  ASSERT_FALSE(embedded_manifests().empty());
  for (const auto& f : embedded_manifests()) {
    SCOPED_TRACE(f.name);
    std::string name = f.name;
    // Byte-exact and up to date with the file in the source tree.
    EXPECT_EQ(std::string(f.text), read_file(std::string(LRA_SOURCE_DIR) + "/manifests/" + name));
    // Tables that are not task manifests: the release registry, the official data, the mixers' reference settings.
    if (name == "releases.toml" || name == "official-data.toml" || name.rfind("reference-mixers/", 0) == 0 ||
        name.rfind("reference-configurations/", 0) == 0)
      continue;
    Manifest m = parse_manifest(f.text, std::string("builtin:") + f.name);
    ASSERT_GT(name.size(), 5u);
    std::string stem = name.substr(0, name.size() - 5);
    // released/<protocol>.<n>/<task>.toml holds the bytes of <protocol>/<task>.toml as released.
    if (stem.rfind("released/", 0) == 0) {
      stem = stem.substr(9);
      const std::size_t slash = stem.find('/');
      stem = stem.substr(0, stem.rfind('.', slash)) + stem.substr(slash);
    }
    // <dir>/<task>.toml declares task = "<task>" and name = "<dir>/<task>".
    EXPECT_EQ(m.name, stem);
    EXPECT_EQ(m.task, stem.substr(stem.find('/') + 1));
  }
}

TEST(Manifest, OfficialTextIdentity) {
  const std::string text = official_text();
  EXPECT_TRUE(is_official_text("listops", text));
  EXPECT_FALSE(is_official_text("listops", text + "\n"));
  EXPECT_FALSE(is_official_text("listops", replace_once(text, "steps = 5000", "steps = 5001")));
  EXPECT_FALSE(is_official_text("no_such_task", text));
  EXPECT_EQ(find_official("no_such_task"), nullptr);
  ASSERT_NE(find_official("listops"), nullptr);
  EXPECT_STREQ(find_official("listops")->name, "lra-v1/listops.toml");
}

TEST(Manifest, Presets) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"official", "smoke"}));
  EXPECT_EQ(preset_file("listops", "official"), "lra-v1/listops.toml");
  EXPECT_EQ(preset_file("text", "smoke"), "smoke/text.toml");
  // Every LRA task has both presets; the official preset reads each suite's own folder.
  const std::vector<std::string> all = {"image", "listops", "pathfinder", "pathx", "retrieval", "text"};
  EXPECT_EQ(suite_tasks(find_suite("lra")),
            (std::vector<std::string>{"listops", "text", "retrieval", "image", "pathfinder", "pathx"}));
  EXPECT_EQ(suite_tasks(find_suite("mqar")), std::vector<std::string>{"mqar"});
  EXPECT_EQ(suite_tasks(find_suite("mad")),
            (std::vector<std::string>{"mad_recall", "mad_fuzzy_recall", "mad_noisy_recall", "mad_selective_copy",
                                      "mad_compression", "mad_memorization"}));
  EXPECT_EQ(preset_tasks("official"),
            (std::vector<std::string>{"image", "listops", "mad_compression", "mad_fuzzy_recall", "mad_memorization",
                                      "mad_noisy_recall", "mad_recall", "mad_selective_copy", "mqar", "pathfinder",
                                      "pathx", "retrieval", "text"}));
  EXPECT_EQ(preset_file("mad_recall", "official"), "mad-v1/mad_recall.toml");
  EXPECT_EQ(preset_file("mqar", "official"), "zoology-v1/mqar.toml");
  EXPECT_EQ(release_protocol("scratch", "mqar"), "zoology-v1");
  EXPECT_EQ(release_protocol("scratch", "listops"), "lra-v1");
  EXPECT_EQ(release_protocol("spt", "listops"), "lra-spt-v1");
  EXPECT_EQ(release_protocol("scratch", "forgetting"), "");
  EXPECT_THROW(find_suite("lra2"), lra::Error);
  // The causal LM of `lrahost forget` and the recall task mqar (a sequence task) have smoke presets too.
  const std::vector<std::string> smoke = {"forgetting",      "image",          "listops",          "mad_compression",
                                          "mad_fuzzy_recall",
                                          "mad_memorization", "mad_noisy_recall", "mad_recall", "mad_selective_copy",
                                          "mqar",            "pathfinder",     "pathx",            "retrieval",
                                          "text"};
  EXPECT_EQ(preset_tasks("smoke"), smoke);
  for (const auto& t : all) {
    EXPECT_EQ(load_preset(t, "official").name, "lra-v1/" + t);
    EXPECT_EQ(load_preset(t, "smoke").name, "smoke/" + t);
  }
  // The forgetting curve's official manifest is versioned on its own.
  EXPECT_EQ(preset_file("forgetting", "official"), "forgetting-v1/forgetting.toml");
  EXPECT_EQ(load_preset("forgetting", "official").name, "forgetting-v1/forgetting");
  EXPECT_EQ(load_preset("forgetting", "smoke").name, "smoke/forgetting");
  ASSERT_NE(find_official("forgetting"), nullptr);
  EXPECT_STREQ(find_official("forgetting")->name, "forgetting-v1/forgetting.toml");
  expect_error([] { load_preset("listops", "fast"); }, ErrorKind::usage,
               {"unknown preset 'fast'", "official", "smoke"});
  expect_error([] { preset_file("listops", "fast"); }, ErrorKind::usage, {"official, smoke"});
  expect_error([] { load_preset("no_such_task", "official"); }, ErrorKind::usage,
               {"no_such_task", "listops"});
}

TEST(Manifest, ForgettingTaskNeedsACausalLmShape) {
  const std::string text(find_official("forgetting")->text);
  Manifest m = parse_manifest(text, "f.toml");
  EXPECT_EQ(m.model.pooling, "none");
  EXPECT_EQ(m.model.positions, "rotary");
  EXPECT_EQ(m.train.decay_steps, 800);
  // forgetting-v1.2: positions for mixers without rotary; absent = "" (refused, as before).
  EXPECT_EQ(m.model.positions_without_rotary, "none");
  const std::string absent = replace_once(text, "positions_without_rotary = \"none\"", "");
  EXPECT_EQ(parse_manifest(absent, "f.toml").model.positions_without_rotary, "");
  EXPECT_FALSE(to_json(parse_manifest(absent, "f.toml"))["model"].contains("positions_without_rotary"));
  EXPECT_EQ(parse_manifest(replace_once(text, "positions_without_rotary = \"none\"",
                                        "positions_without_rotary = \"sinusoidal\""), "f.toml")
                .model.positions_without_rotary,
            "sinusoidal");
  expect_error([&] { parse_manifest(replace_once(text, "positions_without_rotary = \"none\"",
                                                 "positions_without_rotary = \"learned\""), "f.toml"); },
               ErrorKind::rules, {"model.positions_without_rotary", "learned"});
  expect_error([&] { parse_manifest(replace_once(std::string(find_official("listops")->text), "positions = ",
                                                 "positions_without_rotary = \"none\"\npositions = "), "l.toml"); },
               ErrorKind::rules, {"model.positions_without_rotary", "forgetting"});
  expect_error([&] { parse_manifest(replace_once(text, "pooling = \"none\"", "pooling = \"cls\""), "f.toml"); },
               ErrorKind::rules, {"f.toml", "model.pooling", "\"cls\"", "causal language model"});
  expect_error([&] { parse_manifest(replace_once(text, "positions = \"rotary\"", "positions = \"learned\""), "f.toml"); },
               ErrorKind::rules, {"model.positions", "rotary"});
  expect_error([&] { parse_manifest(replace_once(text, "decay_steps = 800", "decay_steps = 0"), "f.toml"); },
               ErrorKind::rules, {"train.decay_steps", "wsd"});
  expect_error([&] { parse_manifest(replace_once(text, "decay_steps = 800", "decay_steps = 1900"), "f.toml"); },
               ErrorKind::rules, {"train.decay_steps", "must not exceed train.steps = 2000"});
  // pooling "none" outside task "forgetting" is a sequence task's model: whether the task is one is
  // known once its data are loaded, so `run` refuses it on a classification task (exit 4,
  // test_sequence_task_cli). The sequence model's own keys need pooling "none".
  const std::string listops(find_official("listops")->text);
  EXPECT_EQ(parse_manifest(replace_once(listops, "pooling = \"cls\"", "pooling = \"none\""), "l.toml").model.pooling,
            "none");
  expect_error([&] { parse_manifest(replace_once(listops, "positions = ", "short_conv = 3\npositions = "), "l.toml"); },
               ErrorKind::rules, {"model.short_conv", "pooling = \"none\""});
  expect_error([&] { parse_manifest(replace_once(listops, "positions = \"sinusoidal\"", "positions = \"none\""), "l.toml"); },
               ErrorKind::rules, {"model.positions", "sequence task"});
  expect_error([&] { parse_manifest(replace_once(listops, "ffn_dim = 1024", "ffn_dim = 0"), "l.toml"); },
               ErrorKind::rules, {"model.ffn_dim", "head"});
  const std::string mqar(find_embedded("smoke/mqar.toml")->text);
  EXPECT_EQ(parse_manifest(mqar, "m.toml").model.short_conv, 3);
  expect_error([&] { parse_manifest(replace_once(mqar, "short_conv = 3", "short_conv = 65"), "m.toml"); },
               ErrorKind::rules, {"model.short_conv", "65", "[1, 64]"});
  expect_error([&] { parse_manifest(replace_once(mqar, "layers = 2", "layers = 1"), "m.toml"); },
               ErrorKind::rules, {"model.short_conv", "at least 2"});
  // decay_steps is optional: LRA manifests do not have it.
  EXPECT_EQ(parse_manifest(listops, "l.toml").train.decay_steps, 0);
}

TEST(Manifest, LoadFile) {
  const std::string path = std::string(LRA_SOURCE_DIR) + "/manifests/lra-v1/listops.toml";
  Manifest m = load_manifest_file(path);
  EXPECT_EQ(m.source, path);
  EXPECT_TRUE(is_official_text("listops", m.text));
  expect_error([] { load_manifest_file("/nonexistent/dir/x.toml"); }, ErrorKind::usage,
               {"/nonexistent/dir/x.toml", "does not exist"});
  expect_error([] { load_manifest_file(LRA_SOURCE_DIR); }, ErrorKind::usage, {"directory"});

  // Errors in a file name the file.
  const auto dir = std::filesystem::temp_directory_path();
  const std::string bad = (dir / "lra_test_manifest_bad.toml").string();
  {
    std::ofstream out(bad, std::ios::binary);
    out << replace_once(official_text(), "heads = 8", "heads = 7");
  }
  expect_error([&] { load_manifest_file(bad); }, ErrorKind::rules, {bad, "model.d_model", "heads = 7"});
  std::filesystem::remove(bad);
}

// ---------------------------------------------------------------------------
// Parse errors: each names the source and the dotted key

TEST(ManifestErrors, MalformedToml) {
  std::string msg = expect_rules(replace_once(official_text(), "layers = 4", "layers = = 4"),
                                 {"malformed TOML"});
  // toml++'s line and column: "test.toml:<line>:<col>: ..."
  EXPECT_NE(msg.find("test.toml:20:"), std::string::npos) << msg;
  expect_rules("schema = \"lrahost.manifest/v1\"\n[model\n", {"malformed TOML", "test.toml:2:"});
}

TEST(ManifestErrors, UnknownKey) {
  expect_rules(replace_once(official_text(), "layers = 4 ", "layer = 4 "),
               {"unknown key 'model.layer'", "did you mean 'model.layers'", "valid keys:", "d_model",
                "test.toml:20:1"});
  expect_rules(official_text() + "\n[train.extra]\nx = 1\n", {"train.extra"});
}

TEST(ManifestErrors, UnknownSectionAndTopLevelKey) {
  expect_rules(official_text() + "\n[optimizer]\nlr = 1\n",
               {"unknown section [optimizer]", "[model], [train], [data], [rules]"});
  expect_rules("version = 2\n" + official_text(), {"unknown top-level key 'version'", "schema, name, task"});
}

TEST(ManifestErrors, WrongType) {
  expect_rules(replace_once(official_text(), "layers = 4 ", "layers = \"4\" "),
               {"model.layers = \"4\"", "expected an integer", "got a string"});
  expect_rules(replace_once(official_text(), "layers = 4 ", "layers = 4.5 "),
               {"model.layers = 4.5", "expected an integer", "got a float"});
  expect_rules(replace_once(official_text(), "pooling = \"cls\"", "pooling = 1"),
               {"model.pooling = 1", "expected a string"});
  expect_rules(replace_once(official_text(), "lr = 0.05", "lr = \"0.05\""),
               {"train.lr = \"0.05\"", "expected a number"});
  expect_rules("schema = \"lrahost.manifest/v1\"\nname = \"x\"\ntask = \"x\"\nmodel = 3\n",
               {"test.toml:4:9: model = 3", "expected a section [model]"});
  // An integer where a float is expected is fine.
  Manifest m = parse_manifest(replace_once(official_text(), "dropout = 0.1 ", "dropout = 0 "), kSource);
  EXPECT_EQ(m.model.dropout, 0.0);
  m = parse_manifest(replace_once(official_text(), "lr = 0.05", "lr = 1"), kSource);
  EXPECT_EQ(m.train.lr, 1.0);
}

TEST(ManifestErrors, MissingKeyAndSection) {
  expect_rules(remove_line(official_text(), "eval_batch_size ="),
               {"missing key 'train.eval_batch_size'", "expected an integer"});
  expect_rules(replace_once(official_text(), "task = \"listops\"", ""), {"missing top-level key 'task'"});
  std::string text = official_text();
  text = text.substr(0, text.find("[rules]"));
  expect_rules(text, {"missing section [rules]"});
  // description is optional.
  Manifest m = parse_manifest(remove_line(official_text(), "description ="), kSource);
  EXPECT_EQ(m.description, "");
}

TEST(ManifestErrors, InvalidValues) {
  const std::string t = official_text();
  std::string msg = expect_rules(replace_once(t, "d_model = 512", "d_model = 500"),
                                 {"model.d_model = 500", "divisible by model.heads = 8"});
  EXPECT_NE(msg.find("test.toml:21:"), std::string::npos) << msg;  // points at the value
  expect_rules(replace_once(t, "qkv_dim = 512", "qkv_dim = 100"), {"model.qkv_dim = 100", "divisible"});
  expect_rules(replace_once(t, "heads = 8", "heads = 0"), {"model.heads = 0", "positive"});
  expect_rules(replace_once(t, "steps = 5000", "steps = -5"), {"train.steps = -5", "positive"});
  expect_rules(replace_once(t, "dropout = 0.1 ", "dropout = 1.0 "), {"model.dropout = 1.0", "[0, 1)"});
  expect_rules(replace_once(t, "attention_dropout = 0.1", "attention_dropout = -0.1"),
               {"model.attention_dropout", "[0, 1)"});
  expect_rules(replace_once(t, "pooling = \"cls\"", "pooling = \"max\""),
               {"model.pooling = \"max\"", "cls, mean"});
  // Rotary positions are the mixers' (an open choice for the classifier, checked against
  // LRA_CAP_ROTARY when a run builds its model); anything else is refused here.
  EXPECT_EQ(parse_manifest(replace_once(t, "positions = \"sinusoidal\"", "positions = \"rotary\""), "test.toml")
                .model.positions,
            "rotary");
  expect_rules(replace_once(t, "positions = \"sinusoidal\"", "positions = \"alibi\""),
               {"model.positions", "sinusoidal, learned, rotary"});
  expect_rules(replace_once(t, "rsqrt_decay\"", "rsqrt_decy\""),
               {"train.schedule", "unknown factor 'rsqrt_decy'", "rsqrt_decay", "cosine_decay"});
  expect_rules(replace_once(t, "betas = [0.9, 0.98]", "betas = [0.9]"),
               {"train.betas = [0.9]", "two numbers"});
  expect_rules(replace_once(t, "betas = [0.9, 0.98]", "betas = [0.9, 1.0]"), {"train.betas", "[0, 1)"});
  expect_rules(replace_once(t, "betas = [0.9, 0.98]", "betas = [0.9, \"a\"]"), {"train.betas"});
  expect_rules(replace_once(t, "betas = [0.9, 0.98]", "betas = 0.9"), {"train.betas = 0.9"});
  expect_rules(replace_once(t, "warmup = 1000", "warmup = 0"), {"train.warmup = 0", "linear_warmup"});
  expect_rules(replace_once(t, "eps = 1e-9", "eps = 0.0"), {"train.eps"});
  expect_rules(replace_once(t, "grad_clip = 0.0", "grad_clip = -1.0"), {"train.grad_clip"});
  expect_rules(replace_once(t, "lr = 0.05", "lr = nan"), {"train.lr = nan", "finite"});
  expect_rules(replace_once(t, "param_budget_ratio = 1.1", "param_budget_ratio = 0.5"),
               {"rules.param_budget_ratio = 0.5"});
  expect_rules(replace_once(t, "lrahost.manifest/v1", "lrahost.manifest/v2"),
               {"schema = \"lrahost.manifest/v2\"", "lrahost.manifest/v1"});
  expect_rules(replace_once(t, "task = \"listops\"", "task = \"list ops\""), {"task = \"list ops\""});
  expect_rules(replace_once(t, "max_args = 10", "max_args = [10]"), {"data.max_args = [10]", "scalar"});
}

TEST(ManifestErrors, DataIsFreeForm) {
  Manifest m = parse_manifest(replace_once(official_text(), "seed = 0\n\n[rules]",
                                           "seed = 0\nname = \"basic\"\nratio = 0.5\nflag = true\n\n[rules]"),
                              kSource);
  EXPECT_EQ(std::get<std::string>(m.data.at("name")), "basic");
  EXPECT_EQ(std::get<double>(m.data.at("ratio")), 0.5);
  EXPECT_EQ(std::get<bool>(m.data.at("flag")), true);
}

// ---------------------------------------------------------------------------
// Overrides

TEST(ManifestOverride, Applied) {
  Manifest m = load_preset("listops", "official");
  apply_override(m, "train.steps=100");
  EXPECT_EQ(m.train.steps, 100);
  apply_override(m, "model.dropout=0.2");
  EXPECT_DOUBLE_EQ(m.model.dropout, 0.2);
  apply_override(m, "model.attention_dropout = 0");  // int for float, spaces around '='
  EXPECT_EQ(m.model.attention_dropout, 0.0);
  apply_override(m, "train.betas=[0.9,0.99]");
  EXPECT_DOUBLE_EQ(m.train.beta1, 0.9);
  EXPECT_DOUBLE_EQ(m.train.beta2, 0.99);
  apply_override(m, "model.pooling=mean");  // bare word -> string
  EXPECT_EQ(m.model.pooling, "mean");
  apply_override(m, "model.positions=\"learned\"");
  EXPECT_EQ(m.model.positions, "learned");
  apply_override(m, "train.schedule=constant*linear_warmup*cosine_decay");
  EXPECT_EQ(m.train.schedule, "constant*linear_warmup*cosine_decay");
  apply_override(m, "train.lr=1e-3");
  EXPECT_DOUBLE_EQ(m.train.lr, 1e-3);
  apply_override(m, "data.train_size=500");
  EXPECT_EQ(std::get<int64_t>(m.data.at("train_size")), 500);
  apply_override(m, "data.task_name=basic");  // new data keys are accepted
  EXPECT_EQ(std::get<std::string>(m.data.at("task_name")), "basic");
  apply_override(m, "rules.param_budget_ratio=2");
  EXPECT_EQ(m.rules.param_budget_ratio, 2.0);
  EXPECT_EQ(m.overrides.size(), 11u);
  EXPECT_EQ(m.overrides.front(), "train.steps=100");
  // The parsed text is unchanged (the run is open division because of overrides).
  EXPECT_TRUE(is_official_text("listops", m.text));
  EXPECT_NO_THROW(validate(m));
}

TEST(ManifestOverride, SyntaxErrorsAreUsage) {
  Manifest m = load_preset("listops", "official");
  expect_error([&] { apply_override(m, "train.steps"); }, ErrorKind::usage, {"train.steps", "key=value"});
  expect_error([&] { apply_override(m, "=5"); }, ErrorKind::usage, {"missing key"});
  expect_error([&] { apply_override(m, "train.steps="); }, ErrorKind::usage, {"missing value"});
  expect_error([&] { apply_override(m, "train.betas=[0.9"); }, ErrorKind::usage, {"train.betas", "TOML"});
  expect_error([&] { apply_override(m, "mixer.window=16"); }, ErrorKind::usage, {"mixer.window", "mixer"});
  EXPECT_TRUE(m.overrides.empty());
}

TEST(ManifestOverride, RulesErrors) {
  const Manifest original = load_preset("listops", "official");
  Manifest m = original;
  expect_error([&] { apply_override(m, "train.step=100"); }, ErrorKind::rules,
               {"--set train.step=100", "unknown key 'train.step'", "valid keys in [train]", "batch_size",
                "did you mean 'train.steps'"});
  expect_error([&] { apply_override(m, "steps=100"); }, ErrorKind::rules,
               {"unknown key 'steps'", "did you mean 'train.steps'"});
  expect_error([&] { apply_override(m, "optimizer.lr=1"); }, ErrorKind::rules,
               {"unknown key 'optimizer.lr'", "model.{layers", "data.<key>"});
  expect_error([&] { apply_override(m, "task=text"); }, ErrorKind::rules, {"'task' cannot be overridden"});
  expect_error([&] { apply_override(m, "model.layers=4.5"); }, ErrorKind::rules,
               {"--set model.layers=4.5", "model.layers = 4.5", "expected an integer"});
  expect_error([&] { apply_override(m, "model.layers=four"); }, ErrorKind::rules,
               {"model.layers = \"four\"", "expected an integer"});
  expect_error([&] { apply_override(m, "model.heads=3"); }, ErrorKind::rules,
               {"--set model.heads=3", "model.d_model = 512", "divisible by model.heads = 3"});
  expect_error([&] { apply_override(m, "model.dropout=1.5"); }, ErrorKind::rules, {"model.dropout = 1.5"});
  expect_error([&] { apply_override(m, "train.schedule=constant*bogus"); }, ErrorKind::rules,
               {"train.schedule", "bogus"});
  expect_error([&] { apply_override(m, "data.sizes=[1,2]"); }, ErrorKind::rules, {"data.sizes", "scalar"});
  // Failed overrides leave the manifest unchanged.
  EXPECT_EQ(to_json(m), to_json(original));
  EXPECT_TRUE(m.overrides.empty());
}

// Issue 18: sizes that decide allocations are bounded before anything is built
// (max_len 2e9 ended in a bare std::bad_alloc).
TEST(ManifestOverride, SizesBeyondWhatIsAllocatedAreRefused) {
  const Manifest original = load_preset("listops", "official");
  Manifest m = original;
  expect_error([&] { apply_override(m, "model.max_len=2000000000"); }, ErrorKind::rules,
               {"--set model.max_len=2000000000", "model.max_len = 2000000000", "expected at most 1048576"});
  expect_error([&] { apply_override(m, "model.d_model=4294967296"); }, ErrorKind::rules,
               {"model.d_model = 4294967296", "expected at most 65536"});
  expect_error([&] { apply_override(m, "model.layers=100000"); }, ErrorKind::rules, {"model.layers", "at most 1024"});
  expect_error([&] { apply_override(m, "model.ffn_dim=9999999"); }, ErrorKind::rules, {"model.ffn_dim", "at most"});
  expect_error([&] { apply_override(m, "train.batch_size=1000000000"); }, ErrorKind::rules,
               {"train.batch_size", "at most 65536"});
  expect_error([&] { apply_override(m, "train.eval_batch_size=1000000000"); }, ErrorKind::rules,
               {"train.eval_batch_size", "at most 65536"});
  EXPECT_EQ(to_json(m), to_json(original));
  // The bound itself is allowed (the text task's 4000-token documents are far below it).
  apply_override(m, "model.max_len=1048576");
  EXPECT_EQ(m.model.max_len, 1048576);
  // In a manifest file too.
  expect_rules(replace_once(official_text(), "max_len = 2000 ", "max_len = 2000000000 "),
               {"model.max_len = 2000000000", "expected at most 1048576"});
}

TEST(ManifestOverride, ValidateNamesOverrides) {
  Manifest m = load_preset("listops", "official");
  apply_override(m, "train.steps=10");
  m.model.heads = 5;  // a caller's own mistake, caught by validate()
  expect_error([&] { validate(m); }, ErrorKind::rules,
               {"builtin:lra-v1/listops.toml", "--set train.steps=10", "model.d_model"});
}

// ---------------------------------------------------------------------------
// Resolved configuration

TEST(Manifest, ToJson) {
  Manifest m = load_preset("listops", "official");
  nlohmann::json j = to_json(m);
  EXPECT_EQ(j["model"]["layers"], 4);
  EXPECT_EQ(j["model"]["pooling"], "cls");
  EXPECT_EQ(j["model"]["dropout"], 0.1);
  EXPECT_EQ(j["train"]["steps"], 5000);
  EXPECT_EQ(j["train"]["lr"], 0.05);
  EXPECT_EQ(j["train"]["schedule"], "constant*linear_warmup*rsqrt_decay");
  EXPECT_EQ(j["train"]["betas"], nlohmann::json::array({0.9, 0.98}));
  EXPECT_EQ(j["train"]["eps"], 1e-9);
  EXPECT_EQ(j["data"]["train_size"], 96000);
  EXPECT_TRUE(j["data"]["train_size"].is_number_integer());
  EXPECT_EQ(j["rules"]["param_budget_ratio"], 1.1);
  // Exactly the contract's keys.
  std::vector<std::string> model_keys_json, train_keys_json;
  for (auto it = j["model"].begin(); it != j["model"].end(); ++it) model_keys_json.push_back(it.key());
  for (auto it = j["train"].begin(); it != j["train"].end(); ++it) train_keys_json.push_back(it.key());
  std::vector<std::string> want_model = model_keys(), want_train = train_keys();
  // model.positions_without_rotary (forgetting only, forgetting-v1.2) is written only where the
  // manifest sets it, so resolved configurations of every earlier manifest stay byte for byte.
  want_model.erase(std::remove(want_model.begin(), want_model.end(), "positions_without_rotary"), want_model.end());
  // model.short_conv (sequence tasks) likewise: only where it is not 0.
  want_model.erase(std::remove(want_model.begin(), want_model.end(), "short_conv"), want_model.end());
  EXPECT_EQ(to_json(load_preset("mqar", "smoke"))["model"]["short_conv"], 3);
  EXPECT_EQ(to_json(load_preset("forgetting", "official"))["model"]["positions_without_rotary"], "none");
  EXPECT_EQ(to_json(load_preset("forgetting", "smoke"))["model"]["positions_without_rotary"], "none");
  std::sort(want_model.begin(), want_model.end());
  std::sort(want_train.begin(), want_train.end());
  EXPECT_EQ(model_keys_json, want_model);
  EXPECT_EQ(train_keys_json, want_train);
  EXPECT_EQ(j.size(), 4u);
}

TEST(Manifest, TrialSeeds) {
  for (const auto& task : suite_tasks(find_suite("lra")))
    EXPECT_EQ(trial_seeds(load_preset(task, "official")), (std::vector<int64_t>{0, 1, 2})) << task;
  EXPECT_EQ(trial_seeds(load_preset("mqar", "official")), (std::vector<int64_t>{0}));  // Zoology: one seed per point
  EXPECT_EQ(trial_seeds(load_preset("listops", "smoke")), (std::vector<int64_t>{0}));
  // Without rules.seeds, the one trial is train.seed.
  const std::string text = replace_once(remove_line(official_text(), "seeds ="), "seed = 0                      # random_seed",
                                        "seed = 7");
  EXPECT_EQ(trial_seeds(parse_manifest(text, kSource)), (std::vector<int64_t>{7}));
  EXPECT_EQ(to_json(parse_manifest(official_text(), kSource))["rules"]["seeds"], nlohmann::json({0, 1, 2}));
}

TEST(ManifestErrors, TrialSeedsMustBeDistinctNonNegativeIntegers) {
  const std::string line = "seeds = [0, 1, 2]";
  expect_rules(replace_once(official_text(), line, "seeds = []"), {"rules.seeds", "that is empty"});
  expect_rules(replace_once(official_text(), line, "seeds = [0, 0]"), {"rules.seeds", "each seed may appear once"});
  expect_rules(replace_once(official_text(), line, "seeds = [0, -1]"), {"rules.seeds", "-1", ">= 0"});
  expect_rules(replace_once(official_text(), line, "seeds = [0, \"one\"]"), {"rules.seeds", "element 1 is"});
  expect_rules(replace_once(official_text(), line, "seeds = 3"), {"rules.seeds", "a non-empty array of integers"});
}

}  // namespace
}  // namespace lra::host
