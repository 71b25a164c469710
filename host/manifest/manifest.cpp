#include "manifest/manifest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include <toml++/toml.h>

#include "common/text.h"
#include "manifest/lr_factors.h"

namespace lra::host {
namespace {

// ---------------------------------------------------------------------------
// Formatting helpers

using text::join;

// Invalid UTF-8 (a --set value is raw command-line bytes) is shown as U+FFFD
// instead of throwing nlohmann's type_error out of an error message.
std::string quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Shortest text that reads back as the same double; always looks like a float.
std::string fmt_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

const char* node_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

// A TOML value as it would be written in the manifest.
std::string render(const toml::node& n, int depth = 0) {
  if (auto* s = n.as_string()) return quote(s->get());
  if (auto* i = n.as_integer()) return std::to_string(i->get());
  if (auto* f = n.as_floating_point()) return fmt_double(f->get());
  if (auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto* a = n.as_array()) {
    if (depth > 2) return "[...]";
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) {
      if (i) out += ", ";
      if (i == 8) {
        out += "...";
        break;
      }
      out += render(*a->get(i), depth + 1);
    }
    return out + "]";
  }
  if (n.is_table()) return "{...}";
  std::ostringstream os;
  if (auto* d = n.as_date()) os << *d;
  else if (auto* t = n.as_time()) os << *t;
  else if (auto* dt = n.as_date_time()) os << *dt;
  return os.str();
}

// Levenshtein distance, for "did you mean" hints.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Only a plausible typo: at most a third of the word wrong.
  if (best_d != std::string::npos && best_d <= std::max<size_t>(1, word.size() / 3)) return best;
  return {};
}

[[noreturn]] void fail(ErrorKind kind, const std::string& msg) { throw Error(kind, msg); }

// ---------------------------------------------------------------------------
// Where a message points: "<source>" or "<source>:<line>:<column>".

using Positions = std::map<std::string, toml::source_position>;

struct Ctx {
  std::string label;        // source name, or "--set key=value"
  bool located = false;     // true when TOML positions refer to the real file
  Positions* positions = nullptr;  // dotted key -> position, filled while parsing

  std::string at(const toml::source_position& p) const {
    if (!located || p.line == 0) return label;
    return label + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
  }
  std::string at(const toml::node& n) const { return at(n.source().begin); }
  std::string at_key(const std::string& dotted) const {
    if (positions) {
      auto it = positions->find(dotted);
      if (it != positions->end()) return at(it->second);
    }
    return label;
  }
};

// ---------------------------------------------------------------------------
// Field tables: the contract's key names, their types, and where they go.

enum class Kind { integer, number, string, pair, int_list };

struct Typed {
  int64_t i = 0;
  double d = 0.0;
  std::string s;
  double pair[2] = {0.0, 0.0};
  std::vector<int64_t> list;
};

struct FieldDef {
  const char* key;
  Kind kind;
  void (*set)(Manifest&, const Typed&);
  bool optional = false;  // absent = the TrainConfig/ModelConfig default (keys added after v1's first release)
};

#define LRA_INT(sec, k) {#k, Kind::integer, [](Manifest& m, const Typed& t) { m.sec.k = t.i; }}
#define LRA_NUM(sec, k) {#k, Kind::number, [](Manifest& m, const Typed& t) { m.sec.k = t.d; }}
#define LRA_STR(sec, k) {#k, Kind::string, [](Manifest& m, const Typed& t) { m.sec.k = t.s; }}
#define LRA_INT_OPTIONAL(sec, k) {#k, Kind::integer, [](Manifest& m, const Typed& t) { m.sec.k = t.i; }, true}
#define LRA_STR_OPTIONAL(sec, k) {#k, Kind::string, [](Manifest& m, const Typed& t) { m.sec.k = t.s; }, true}

const std::vector<FieldDef>& model_fields() {
  static const std::vector<FieldDef> f = {
      LRA_INT(model, layers),  LRA_INT(model, d_model),  LRA_INT(model, heads),
      LRA_INT(model, qkv_dim), LRA_INT(model, ffn_dim),  LRA_NUM(model, dropout),
      LRA_NUM(model, attention_dropout), LRA_STR(model, pooling), LRA_STR(model, positions),
      LRA_INT(model, max_len),
      LRA_STR_OPTIONAL(model, padding_mask),
      LRA_STR_OPTIONAL(model, positions_without_rotary),
  };
  return f;
}

const std::vector<FieldDef>& train_fields() {
  static const std::vector<FieldDef> f = {
      LRA_INT(train, steps),
      LRA_INT(train, batch_size),
      LRA_NUM(train, lr),
      LRA_STR(train, schedule),
      LRA_INT(train, warmup),
      LRA_INT(train, steps_per_cycle),
      LRA_INT_OPTIONAL(train, decay_steps),
      LRA_STR_OPTIONAL(train, precision),
      LRA_NUM(train, weight_decay),
      {"betas", Kind::pair,
       [](Manifest& m, const Typed& t) {
         m.train.beta1 = t.pair[0];
         m.train.beta2 = t.pair[1];
       }},
      LRA_NUM(train, eps),
      LRA_NUM(train, grad_clip),
      LRA_INT(train, eval_every),
      LRA_INT(train, checkpoint_every),
      LRA_INT(train, seed),
      LRA_INT(train, eval_batch_size),
  };
  return f;
}

const std::vector<FieldDef>& rules_fields() {
  static const std::vector<FieldDef> f = {
      LRA_NUM(rules, param_budget_ratio),
      // The trial seeds a complete submission runs (lrahost suite, verify); optional: default [train.seed].
      {"seeds", Kind::int_list, [](Manifest& m, const Typed& t) { m.rules.seeds = t.list; }, true},
  };
  return f;
}

#undef LRA_INT
#undef LRA_NUM
#undef LRA_STR
#undef LRA_INT_OPTIONAL
#undef LRA_STR_OPTIONAL

std::vector<std::string> key_names(const std::vector<FieldDef>& defs) {
  std::vector<std::string> out;
  for (const auto& d : defs) out.emplace_back(d.key);
  return out;
}

const std::vector<std::string>& top_keys() {
  static const std::vector<std::string> k = {"schema", "name", "task", "description"};
  return k;
}
const std::vector<std::string>& section_names() {
  static const std::vector<std::string> k = {"model", "train", "data", "rules"};
  return k;
}

const std::vector<FieldDef>* fields_of(const std::string& section) {
  if (section == "model") return &model_fields();
  if (section == "train") return &train_fields();
  if (section == "rules") return &rules_fields();
  return nullptr;
}

const char* expected(Kind k) {
  switch (k) {
    case Kind::integer: return "an integer";
    case Kind::number: return "a number";
    case Kind::string: return "a string";
    case Kind::pair: return "an array of two numbers [beta1, beta2]";
    case Kind::int_list: return "a non-empty array of integers, e.g. [0, 1, 2]";
  }
  return "";
}

// Converts a TOML node to the field's kind; wrong types are rules errors.
Typed convert(const toml::node& n, Kind kind, const std::string& dotted, const Ctx& ctx) {
  auto wrong = [&](const std::string& extra = {}) -> Typed {
    fail(ErrorKind::rules, ctx.at(n) + ": " + dotted + " = " + render(n) + ": expected " +
                               expected(kind) + ", got " + node_type_name(n) + extra);
  };
  Typed t;
  switch (kind) {
    case Kind::integer:
      if (auto* i = n.as_integer()) {
        t.i = i->get();
        return t;
      }
      if (n.is_floating_point()) return wrong(" (a fractional value is not accepted here)");
      return wrong();
    case Kind::number:
      if (auto* i = n.as_integer()) {
        t.d = static_cast<double>(i->get());
        return t;
      }
      if (auto* f = n.as_floating_point()) {
        t.d = f->get();
        return t;
      }
      return wrong();
    case Kind::string:
      if (auto* s = n.as_string()) {
        t.s = s->get();
        return t;
      }
      return wrong();
    case Kind::pair: {
      auto* a = n.as_array();
      if (!a) return wrong();
      if (a->size() != 2) return wrong(" with " + std::to_string(a->size()) + " elements");
      for (size_t i = 0; i < 2; ++i) {
        const toml::node& e = *a->get(i);
        if (auto* iv = e.as_integer()) t.pair[i] = static_cast<double>(iv->get());
        else if (auto* fv = e.as_floating_point()) t.pair[i] = fv->get();
        else return wrong(" whose element " + std::to_string(i) + " is " + node_type_name(e));
      }
      return t;
    }
    case Kind::int_list: {
      auto* a = n.as_array();
      if (!a || a->empty()) return wrong(a ? " that is empty" : "");
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& e = *a->get(i);
        auto* iv = e.as_integer();
        if (!iv) return wrong(" whose element " + std::to_string(i) + " is " + node_type_name(e));
        t.list.push_back(iv->get());
      }
      return t;
    }
  }
  return t;
}

lra::Value convert_data(const toml::node& n, const std::string& dotted, const Ctx& ctx) {
  if (auto* b = n.as_boolean()) return b->get();
  if (auto* i = n.as_integer()) return i->get();
  if (auto* f = n.as_floating_point()) return f->get();
  if (auto* s = n.as_string()) return s->get();
  fail(ErrorKind::rules, ctx.at(n) + ": " + dotted + " = " + render(n) +
                             ": expected a scalar (boolean, integer, float or string), got " +
                             node_type_name(n));
}

void remember(const Ctx& ctx, const std::string& dotted, const toml::node& n) {
  if (ctx.positions) (*ctx.positions)[dotted] = n.source().begin;
}

// The key of `tbl` that appears first in the file among those rejected by `known`.
template <class Known>
std::optional<std::pair<std::string, toml::source_position>> first_unknown(const toml::table& tbl,
                                                                           Known known) {
  std::optional<std::pair<std::string, toml::source_position>> best;
  for (const auto& [k, v] : tbl) {
    std::string name(k.str());
    if (known(name)) continue;
    toml::source_position p = k.source().begin.line ? k.source().begin : v.source().begin;
    auto before = [](const toml::source_position& a, const toml::source_position& b) {
      return a.line < b.line || (a.line == b.line && a.column < b.column);
    };
    if (!best || before(p, best->second)) best = std::make_pair(name, p);
  }
  return best;
}

void read_section(Manifest& m, const toml::table& tbl, const std::string& section,
                  const std::vector<FieldDef>& defs, const Ctx& ctx) {
  const auto names = key_names(defs);
  auto unknown = first_unknown(tbl, [&](const std::string& k) {
    return std::find(names.begin(), names.end(), k) != names.end();
  });
  if (unknown) {
    std::string hint = closest(unknown->first, names);
    fail(ErrorKind::rules, ctx.at(unknown->second) + ": unknown key '" + section + "." +
                               unknown->first + "' in [" + section + "]" +
                               (hint.empty() ? "" : "; did you mean '" + section + "." + hint + "'?") +
                               " (valid keys: " + join(names) + ")");
  }
  for (const auto& d : defs) {
    const std::string dotted = section + "." + d.key;
    const toml::node* n = tbl.get(d.key);
    if (!n && d.optional) continue;
    if (!n) {
      fail(ErrorKind::rules, ctx.label + ": missing key '" + dotted + "' in [" + section +
                                 "] (expected " + expected(d.kind) + ")");
    }
    remember(ctx, dotted, *n);
    d.set(m, convert(*n, d.kind, dotted, ctx));
  }
}

std::string top_string(const toml::table& root, const std::string& key, bool required,
                       const Ctx& ctx) {
  const toml::node* n = root.get(key);
  if (!n) {
    if (required) fail(ErrorKind::rules, ctx.label + ": missing top-level key '" + key + "' (expected a string)");
    return {};
  }
  remember(ctx, key, *n);
  return convert(*n, Kind::string, key, ctx).s;
}

// ---------------------------------------------------------------------------
// Validation

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

void validate_impl(const Manifest& m, const Ctx& ctx) {
  auto bad = [&](const std::string& dotted, const std::string& value, const std::string& why) {
    fail(ErrorKind::rules, ctx.at_key(dotted) + ": " + dotted + " = " + value + ": " + why);
  };
  auto positive = [&](const std::string& dotted, int64_t v) {
    if (v <= 0) bad(dotted, std::to_string(v), "expected a positive integer");
  };
  // Sizes that decide allocations (position tables, activations, batches) are
  // bounded before anything is built: `max_len = 2e9` is refused here, not a
  // bad_alloc later. The bounds are far above any LRA or forgetting protocol
  // (Path-X: 16,384 tokens; widths <= 1,024; batches <= 512).
  auto at_most = [&](const std::string& dotted, int64_t v, int64_t limit) {
    if (v > limit)
      bad(dotted, std::to_string(v),
          "expected at most " + std::to_string(limit) + " (a size beyond what lrahost allocates for a model)");
  };
  auto finite = [&](const std::string& dotted, double v) {
    if (!std::isfinite(v)) bad(dotted, fmt_double(v), "expected a finite number");
  };
  auto unit_interval = [&](const std::string& dotted, double v) {
    finite(dotted, v);
    if (v < 0.0 || v >= 1.0) bad(dotted, fmt_double(v), "expected a number in [0, 1)");
  };
  auto one_of = [&](const std::string& dotted, const std::string& v,
                    const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      bad(dotted, quote(v), "expected one of " + join(allowed));
  };

  // Top level.
  if (m.schema != kManifestSchema)
    bad("schema", quote(m.schema),
        std::string("unsupported manifest schema; this host reads \"") + kManifestSchema + "\"");
  if (m.name.empty()) bad("name", quote(m.name), "expected a non-empty string");
  if (m.task.empty() || !std::all_of(m.task.begin(), m.task.end(), is_name_char))
    bad("task", quote(m.task), "expected a task name (letters, digits, '_' or '-'), e.g. \"listops\"");

  // [model]
  const ModelConfig& md = m.model;
  positive("model.layers", md.layers);
  positive("model.d_model", md.d_model);
  positive("model.heads", md.heads);
  positive("model.qkv_dim", md.qkv_dim);
  positive("model.ffn_dim", md.ffn_dim);
  positive("model.max_len", md.max_len);
  at_most("model.layers", md.layers, kMaxModelLayers);
  at_most("model.d_model", md.d_model, kMaxModelWidth);
  at_most("model.heads", md.heads, kMaxModelWidth);
  at_most("model.qkv_dim", md.qkv_dim, kMaxModelWidth);
  at_most("model.ffn_dim", md.ffn_dim, kMaxModelWidth);
  at_most("model.max_len", md.max_len, kMaxSequenceLength);
  if (md.d_model % md.heads != 0)
    bad("model.d_model", std::to_string(md.d_model),
        "must be divisible by model.heads = " + std::to_string(md.heads));
  if (md.qkv_dim % md.heads != 0)
    bad("model.qkv_dim", std::to_string(md.qkv_dim),
        "must be divisible by model.heads = " + std::to_string(md.heads));
  unit_interval("model.dropout", md.dropout);
  unit_interval("model.attention_dropout", md.attention_dropout);
  one_of("model.pooling", md.pooling, {"cls", "mean", "first", "none"});
  one_of("model.positions", md.positions, {"sinusoidal", "learned", "rotary"});
  one_of("model.padding_mask", md.padding_mask, {"length", "nonzero_tokens"});
  // The causal LM of the forgetting curve has no pooling and gets its
  // positions from the mixers (rotary); the LRA classifier needs both.
  const bool lm = m.task == kForgettingTask;
  if (lm && md.pooling != "none")
    bad("model.pooling", quote(md.pooling), "task \"forgetting\" trains a causal language model: expected \"none\"");
  if (lm && md.positions != "rotary")
    bad("model.positions", quote(md.positions),
        "task \"forgetting\" gives positions through the mixers: expected \"rotary\"");
  if (lm && md.padding_mask != "length")
    bad("model.padding_mask", quote(md.padding_mask), "task \"forgetting\" has no padding: expected \"length\"");
  if (!md.positions_without_rotary.empty()) {
    if (!lm)
      bad("model.positions_without_rotary", quote(md.positions_without_rotary),
          "only task \"forgetting\" (a causal LM) has this key; the classifier's positions are model.positions");
    one_of("model.positions_without_rotary", md.positions_without_rotary, {"none", "sinusoidal"});
  }
  if (!lm && md.pooling == "none")
    bad("model.pooling", "\"none\"", "only task \"forgetting\" (a causal LM) has no pooling; expected one of cls, mean, first");
  if (!lm && md.positions == "rotary")
    bad("model.positions", "\"rotary\"", "rotary positions are for task \"forgetting\"; expected one of sinusoidal, learned");
  if (md.positions == "rotary" && (md.qkv_dim / md.heads) % 2 != 0)
    bad("model.qkv_dim", std::to_string(md.qkv_dim), "rotary positions need an even width per head (qkv_dim / heads)");

  // [train]
  const TrainConfig& t = m.train;
  positive("train.steps", t.steps);
  positive("train.batch_size", t.batch_size);
  finite("train.lr", t.lr);
  if (t.lr <= 0.0) bad("train.lr", fmt_double(t.lr), "expected a positive number");
  std::string unknown;
  auto factors = parse_lr_factors(t.schedule, &unknown);
  if (!factors) {
    bad("train.schedule", quote(t.schedule),
        (unknown.empty() ? std::string("empty factor name")
                         : "unknown factor '" + unknown + "'") +
            " (factors are joined by '*'; known factors: " + join(lr_factor_names()) + ")");
  }
  if (t.warmup < 0) bad("train.warmup", std::to_string(t.warmup), "expected an integer >= 0");
  if (t.warmup == 0) {
    for (LrFactor f : *factors) {
      if (factor_needs_warmup(f))
        bad("train.warmup", "0",
            "must be positive because train.schedule uses " +
                lr_factor_names()[static_cast<size_t>(f)] + " (it divides by the warmup)");
    }
  }
  positive("train.steps_per_cycle", t.steps_per_cycle);
  one_of("train.precision", t.precision, {"auto", "float32"});
  if (t.decay_steps < 0) bad("train.decay_steps", std::to_string(t.decay_steps), "expected an integer >= 0");
  if (std::find(factors->begin(), factors->end(), LrFactor::wsd) != factors->end()) {
    if (t.decay_steps <= 0)
      bad("train.decay_steps", std::to_string(t.decay_steps),
          "must be positive because train.schedule uses wsd (the length of its decay phase)");
    else if (t.warmup + t.decay_steps > t.steps)
      bad("train.decay_steps", std::to_string(t.decay_steps),
          "warmup + decay_steps must not exceed train.steps = " + std::to_string(t.steps) +
              " (overrides apply in order: to lengthen a run, set train.steps first)");
  }
  finite("train.weight_decay", t.weight_decay);
  if (t.weight_decay < 0.0)
    bad("train.weight_decay", fmt_double(t.weight_decay), "expected a number >= 0");
  for (double b : {t.beta1, t.beta2}) {
    if (!std::isfinite(b) || b < 0.0 || b >= 1.0)
      bad("train.betas", "[" + fmt_double(t.beta1) + ", " + fmt_double(t.beta2) + "]",
          "expected two numbers [beta1, beta2], each in [0, 1)");
  }
  finite("train.eps", t.eps);
  if (t.eps <= 0.0) bad("train.eps", fmt_double(t.eps), "expected a positive number");
  finite("train.grad_clip", t.grad_clip);
  if (t.grad_clip < 0.0)
    bad("train.grad_clip", fmt_double(t.grad_clip), "expected a number >= 0 (0 turns clipping off)");
  positive("train.eval_every", t.eval_every);
  positive("train.checkpoint_every", t.checkpoint_every);
  if (t.seed < 0) bad("train.seed", std::to_string(t.seed), "expected an integer >= 0");
  positive("train.eval_batch_size", t.eval_batch_size);
  at_most("train.batch_size", t.batch_size, kMaxBatchSize);
  at_most("train.eval_batch_size", t.eval_batch_size, kMaxBatchSize);

  // [rules]
  finite("rules.param_budget_ratio", m.rules.param_budget_ratio);
  if (m.rules.param_budget_ratio < 1.0)
    bad("rules.param_budget_ratio", fmt_double(m.rules.param_budget_ratio),
        "expected a number >= 1.0 (the reference Transformer itself must fit the budget)");
  std::vector<int64_t> seen;
  for (int64_t seed : m.rules.seeds) {
    if (seed < 0) bad("rules.seeds", std::to_string(seed), "expected seeds >= 0");
    if (std::find(seen.begin(), seen.end(), seed) != seen.end())
      bad("rules.seeds", std::to_string(seed), "each seed may appear once");
    seen.push_back(seed);
  }
}

std::string trim(const std::string& s) { return std::string(text::trim(s)); }

std::string all_dotted_keys_hint() {
  std::vector<std::string> parts;
  for (const auto& sec : {"model", "train", "rules"})
    parts.push_back(std::string(sec) + ".{" + join(key_names(*fields_of(sec)), ",") + "}");
  parts.push_back("data.<key>");
  return join(parts, " ");
}

}  // namespace

// ---------------------------------------------------------------------------

const std::vector<std::string>& model_keys() {
  static const std::vector<std::string> k = key_names(model_fields());
  return k;
}
const std::vector<std::string>& train_keys() {
  static const std::vector<std::string> k = key_names(train_fields());
  return k;
}
const std::vector<std::string>& rules_keys() {
  static const std::vector<std::string> k = key_names(rules_fields());
  return k;
}

Manifest parse_manifest(std::string_view text, const std::string& source) {
  Positions positions;
  Ctx ctx{source, true, &positions};

  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    fail(ErrorKind::rules, ctx.at(e.source().begin) + ": malformed TOML: " +
                               std::string(e.description()));
  }

  Manifest m;
  m.source = source;
  m.text = std::string(text);

  // Top-level structure: known strings and the four sections, nothing else.
  auto unknown = first_unknown(root, [](const std::string& k) {
    return std::find(top_keys().begin(), top_keys().end(), k) != top_keys().end() ||
           std::find(section_names().begin(), section_names().end(), k) != section_names().end();
  });
  if (unknown) {
    const toml::node* n = root.get(unknown->first);
    std::vector<std::string> secs;
    for (const auto& s : section_names()) secs.push_back("[" + s + "]");
    std::string what = n && n->is_table() ? "unknown section [" + unknown->first + "]"
                                          : "unknown top-level key '" + unknown->first + "'";
    fail(ErrorKind::rules, ctx.at(unknown->second) + ": " + what + " (valid sections: " +
                               join(secs) + "; valid top-level keys: " + join(top_keys()) + ")");
  }

  m.schema = top_string(root, "schema", true, ctx);
  if (m.schema != kManifestSchema) {  // another schema's keys would only confuse the messages below
    fail(ErrorKind::rules, ctx.at_key("schema") + ": schema = " + quote(m.schema) +
                               ": unsupported manifest schema; this host reads \"" + kManifestSchema + "\"");
  }
  m.name = top_string(root, "name", true, ctx);
  m.task = top_string(root, "task", true, ctx);
  m.description = top_string(root, "description", false, ctx);

  for (const auto& sec : section_names()) {
    const toml::node* n = root.get(sec);
    if (!n) fail(ErrorKind::rules, ctx.label + ": missing section [" + sec + "]");
    const toml::table* tbl = n->as_table();
    if (!tbl)
      fail(ErrorKind::rules, ctx.at(*n) + ": " + sec + " = " + render(*n) + ": expected a section [" +
                                 sec + "] (a table), got " + node_type_name(*n));
    if (sec == "data") {
      for (const auto& [k, v] : *tbl) {
        std::string dotted = "data." + std::string(k.str());
        remember(ctx, dotted, v);
        m.data[std::string(k.str())] = convert_data(v, dotted, ctx);
      }
    } else {
      read_section(m, *tbl, sec, *fields_of(sec), ctx);
    }
  }

  validate_impl(m, ctx);
  return m;
}

void validate(const Manifest& m) {
  Ctx ctx;
  ctx.label = m.source.empty() ? std::string("manifest") : m.source;
  if (!m.overrides.empty()) ctx.label += " (with --set " + join(m.overrides, ", ") + ")";
  validate_impl(m, ctx);
}

// Offset of the first byte of `s` that is not well-formed UTF-8 (Unicode
// Table 3-7: no overlong forms, surrogates or code points above U+10FFFF), or npos.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned c = b(i);
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) { n = 2; lo = 0xA0; }
    else if (c == 0xED) { n = 2; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) n = 2;
    else if (c == 0xF0) { n = 3; lo = 0x90; }
    else if (c == 0xF4) { n = 3; hi = 0x8F; }
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else return i;
    if (i + n >= s.size()) return i;  // truncated sequence
    if (b(i + 1) < lo || b(i + 1) > hi) return i;
    for (size_t k = 2; k <= n; ++k)
      if (b(i + k) < 0x80 || b(i + k) > 0xBF) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

void require_utf8_assignment(std::string_view assignment) {
  if (const size_t bad = invalid_utf8_at(assignment); bad != std::string_view::npos)
    fail(ErrorKind::usage, "--set: the assignment is not valid UTF-8 (byte " + std::to_string(bad) +
                               "); write keys and values as UTF-8 text");
}

void apply_override(Manifest& m, const std::string& assignment) {
  // Command-line bytes: everything downstream (messages, result.json,
  // checkpoints) is UTF-8 text, as a TOML manifest is by definition.
  require_utf8_assignment(assignment);
  const std::string label = "--set " + assignment;
  auto eq = assignment.find('=');
  std::string key = trim(assignment.substr(0, eq == std::string::npos ? assignment.size() : eq));
  if (key.rfind("mixer.", 0) == 0) {
    fail(ErrorKind::usage, label + ": '" + key +
                               "' is a mixer option, not a manifest key; mixer.* options go to the plugin");
  }
  if (eq == std::string::npos) {
    fail(ErrorKind::usage, label + ": expected key=value, e.g. --set train.steps=100");
  }
  std::string raw = trim(assignment.substr(eq + 1));
  if (key.empty()) fail(ErrorKind::usage, label + ": missing key before '=' (e.g. --set train.steps=100)");
  if (raw.empty()) fail(ErrorKind::usage, label + ": missing value after '=' (e.g. --set train.steps=100)");

  // Resolve the key.
  auto dot = key.find('.');
  std::string section = dot == std::string::npos ? std::string() : key.substr(0, dot);
  std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
  const std::vector<FieldDef>* defs = fields_of(section);
  const FieldDef* def = nullptr;
  if (defs) {
    for (const auto& d : *defs)
      if (name == d.key) def = &d;
  }
  const bool data_key = section == "data" && !name.empty() &&
                        std::all_of(name.begin(), name.end(), is_name_char);
  if (!def && !data_key) {
    std::vector<std::string> all;
    for (const auto& sec : {"model", "train", "rules"})
      for (const auto& k : key_names(*fields_of(sec))) all.push_back(std::string(sec) + "." + k);
    std::string hint = closest(key, all);
    if (hint.empty() && dot == std::string::npos) {
      for (const auto& k : all)
        if (k.substr(k.find('.') + 1) == key) hint = k;
    }
    std::string why;
    if (std::find(top_keys().begin(), top_keys().end(), key) != top_keys().end())
      why = "'" + key + "' cannot be overridden";
    else if (defs)
      why = "unknown key '" + key + "' (valid keys in [" + section + "]: " + join(key_names(*defs)) + ")";
    else
      why = "unknown key '" + key + "' (valid keys: " + all_dotted_keys_hint() + ")";
    fail(ErrorKind::rules, label + ": " + why + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }

  // Read the value as TOML; a bare word that is not TOML is a string
  // (so --set model.pooling=mean works without shell-escaped quotes).
  toml::table parsed;
  bool as_string = false;
  const std::string doc = "x = " + raw + "\n";
  try {
    parsed = toml::parse(std::string_view(doc), std::string_view("--set"));
  } catch (const toml::parse_error& e) {
    const char first = raw.front();
    if (first == '"' || first == '\'' || first == '[' || first == '{' ||
        raw.find('\n') != std::string::npos) {
      fail(ErrorKind::usage, label + ": cannot read the value " + raw + " as TOML: " +
                                 std::string(e.description()));
    }
    as_string = true;
  }
  if (!as_string && (parsed.size() != 1 || !parsed.get("x"))) {
    fail(ErrorKind::usage, label + ": the value must be a single TOML value");
  }
  toml::value<std::string> string_node(raw);
  const toml::node& node = as_string ? static_cast<const toml::node&>(string_node) : *parsed.get("x");

  Ctx ctx{label, false, nullptr};
  Manifest updated = m;
  if (def) {
    def->set(updated, convert(node, def->kind, key, ctx));
  } else {
    updated.data[name] = convert_data(node, key, ctx);
  }
  validate_impl(updated, ctx);
  updated.overrides.push_back(key + "=" + raw);
  m = std::move(updated);
}

nlohmann::json to_json(const Manifest& m) {
  using nlohmann::json;
  const ModelConfig& md = m.model;
  const TrainConfig& t = m.train;
  json data = json::object();
  for (const auto& [k, v] : m.data) {
    switch (v.index()) {
      case 0: data[k] = std::get<bool>(v); break;
      case 1: data[k] = std::get<int64_t>(v); break;
      case 2: data[k] = std::get<double>(v); break;
      default: data[k] = std::get<std::string>(v); break;
    }
  }
  json out = json{
      {"model",
       {{"layers", md.layers},
        {"d_model", md.d_model},
        {"heads", md.heads},
        {"qkv_dim", md.qkv_dim},
        {"ffn_dim", md.ffn_dim},
        {"dropout", md.dropout},
        {"attention_dropout", md.attention_dropout},
        {"pooling", md.pooling},
        {"positions", md.positions},
        {"max_len", md.max_len},
        {"padding_mask", md.padding_mask}}},
      {"train",
       {{"steps", t.steps},
        {"batch_size", t.batch_size},
        {"lr", t.lr},
        {"schedule", t.schedule},
        {"warmup", t.warmup},
        {"steps_per_cycle", t.steps_per_cycle},
        {"decay_steps", t.decay_steps},
        {"precision", t.precision},
        {"weight_decay", t.weight_decay},
        {"betas", json::array({t.beta1, t.beta2})},
        {"eps", t.eps},
        {"grad_clip", t.grad_clip},
        {"eval_every", t.eval_every},
        {"checkpoint_every", t.checkpoint_every},
        {"seed", t.seed},
        {"eval_batch_size", t.eval_batch_size}}},
      {"data", data},
      {"rules", {{"param_budget_ratio", m.rules.param_budget_ratio}, {"seeds", trial_seeds(m)}}},
  };
  // Only where the manifest has it: resolved configurations of older releases stay as they were.
  if (!md.positions_without_rotary.empty()) out["model"]["positions_without_rotary"] = md.positions_without_rotary;
  return out;
}

std::vector<int64_t> trial_seeds(const Manifest& m) {
  return m.rules.seeds.empty() ? std::vector<int64_t>{m.train.seed} : m.rules.seeds;
}

}  // namespace lra::host
