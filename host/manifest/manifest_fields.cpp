#include "manifest/manifest_fields.h"

#include <sstream>

namespace lra::host {
namespace manifest_detail {

using nlohmann::json;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// ---------------------------------------------------------------------------
// Field tables. A scalar field is stored in the member of the same name, read
// from Typed::`from` and written to JSON as is (int64_t stays an integer,
// double a float).

#define LRA_FIELD(sec, k, kind, from, optional)                                \
  FieldDef {                                                                   \
    #k, kind, [](Manifest& m, const Typed& t) { m.sec.k = t.from; },           \
        [](const Manifest& m) -> json { return m.sec.k; }, optional            \
  }
#define LRA_INT(sec, k) LRA_FIELD(sec, k, Kind::integer, i, false)
#define LRA_NUM(sec, k) LRA_FIELD(sec, k, Kind::number, d, false)
#define LRA_STR(sec, k) LRA_FIELD(sec, k, Kind::string, s, false)
#define LRA_INT_OPTIONAL(sec, k) LRA_FIELD(sec, k, Kind::integer, i, true)
#define LRA_STR_OPTIONAL(sec, k) LRA_FIELD(sec, k, Kind::string, s, true)

const std::vector<FieldDef>& model_fields() {
  static const std::vector<FieldDef> f = {
      LRA_INT(model, layers),  LRA_INT(model, d_model),  LRA_INT(model, heads),
      LRA_INT(model, qkv_dim), LRA_INT(model, ffn_dim),  LRA_NUM(model, dropout),
      LRA_NUM(model, attention_dropout), LRA_STR(model, pooling), LRA_STR(model, positions),
      LRA_INT(model, max_len),
      LRA_STR_OPTIONAL(model, padding_mask),
      // In to_json only where the manifest has it: resolved configurations of
      // older releases stay as they were.
      {"positions_without_rotary", Kind::string,
       [](Manifest& m, const Typed& t) { m.model.positions_without_rotary = t.s; },
       [](const Manifest& m) -> json {
         const std::string& v = m.model.positions_without_rotary;
         return v.empty() ? json() : json(v);
       },
       true},
      // In to_json only when non-zero, like positions_without_rotary.
      {"short_conv", Kind::integer, [](Manifest& m, const Typed& t) { m.model.short_conv = t.i; },
       [](const Manifest& m) -> json { return m.model.short_conv == 0 ? json() : json(m.model.short_conv); }, true},
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
       },
       [](const Manifest& m) -> json { return json::array({m.train.beta1, m.train.beta2}); }},
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
      {"seeds", Kind::int_list, [](Manifest& m, const Typed& t) { m.rules.seeds = t.list; },
       [](const Manifest& m) -> json { return trial_seeds(m); }, true},
      // In to_json only where the manifest has it, like positions_without_rotary.
      {"reference_settings", Kind::string, [](Manifest& m, const Typed& t) { m.rules.reference_settings = t.s; },
       [](const Manifest& m) -> json {
         return m.rules.reference_settings.empty() ? json() : json(m.rules.reference_settings);
       },
       true},
  };
  return f;
}

// [pretrain]: the objective's key, then the [train] keys its phase uses (no
// seed: the trial seed is train.seed; no eval_batch_size: nothing is evaluated).
#define LRA_PT(k, kind, from, optional)                                                                   \
  FieldDef {                                                                                              \
    #k, kind, [](Manifest& m, const Typed& t) { m.pretrain.train.k = t.from; },                           \
        [](const Manifest& m) -> json { return m.pretrain.train.k; }, optional                            \
  }
const std::vector<FieldDef>& pretrain_fields() {
  static const std::vector<FieldDef> f = {
      {"mask_ratio", Kind::number, [](Manifest& m, const Typed& t) { m.pretrain.mask_ratio = t.d; },
       [](const Manifest& m) -> json { return m.pretrain.mask_ratio; }},
      LRA_PT(steps, Kind::integer, i, false),
      LRA_PT(batch_size, Kind::integer, i, false),
      LRA_PT(lr, Kind::number, d, false),
      LRA_PT(schedule, Kind::string, s, false),
      LRA_PT(warmup, Kind::integer, i, false),
      LRA_PT(steps_per_cycle, Kind::integer, i, false),
      LRA_PT(decay_steps, Kind::integer, i, true),
      LRA_PT(weight_decay, Kind::number, d, false),
      {"betas", Kind::pair,
       [](Manifest& m, const Typed& t) {
         m.pretrain.train.beta1 = t.pair[0];
         m.pretrain.train.beta2 = t.pair[1];
       },
       [](const Manifest& m) -> json { return json::array({m.pretrain.train.beta1, m.pretrain.train.beta2}); }},
      LRA_PT(eps, Kind::number, d, false),
      LRA_PT(grad_clip, Kind::number, d, false),
      LRA_PT(eval_every, Kind::integer, i, false),  // the report cadence: the phase evaluates nothing
      LRA_PT(checkpoint_every, Kind::integer, i, false),
  };
  return f;
}
#undef LRA_PT

#undef LRA_FIELD
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
  static const std::vector<std::string> k = {"model", "train", "data", "rules", "pretrain"};
  return k;
}

bool optional_section(const std::string& section) { return section == "pretrain"; }

const std::vector<FieldDef>* fields_of(const std::string& section) {
  if (section == "model") return &model_fields();
  if (section == "train") return &train_fields();
  if (section == "rules") return &rules_fields();
  if (section == "pretrain") return &pretrain_fields();
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

// ---------------------------------------------------------------------------
// TOML conversion

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

std::string render(const toml::node& n, int depth) {
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

namespace {

// The array kinds of convert: `wrong(extra)` throws the type error.
template <class Wrong>
Typed convert_pair(const toml::array* a, Wrong wrong) {
  Typed t;
  if (!a) return wrong("");
  if (a->size() != 2) return wrong(" with " + std::to_string(a->size()) + " elements");
  for (size_t i = 0; i < 2; ++i) {
    const toml::node& e = *a->get(i);
    if (auto* iv = e.as_integer()) t.pair[i] = static_cast<double>(iv->get());
    else if (auto* fv = e.as_floating_point()) t.pair[i] = fv->get();
    else return wrong(" whose element " + std::to_string(i) + " is " + node_type_name(e));
  }
  return t;
}

template <class Wrong>
Typed convert_int_list(const toml::array* a, Wrong wrong) {
  Typed t;
  if (!a || a->empty()) return wrong(a ? " that is empty" : "");
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::node& e = *a->get(i);
    auto* iv = e.as_integer();
    if (!iv) return wrong(" whose element " + std::to_string(i) + " is " + node_type_name(e));
    t.list.push_back(iv->get());
  }
  return t;
}

}  // namespace

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
    case Kind::pair: return convert_pair(n.as_array(), wrong);
    case Kind::int_list: return convert_int_list(n.as_array(), wrong);
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

}  // namespace manifest_detail

// ---------------------------------------------------------------------------
// Public: the key lists and the resolved trial seeds.

const std::vector<std::string>& model_keys() {
  static const std::vector<std::string> k = manifest_detail::key_names(manifest_detail::model_fields());
  return k;
}
const std::vector<std::string>& train_keys() {
  static const std::vector<std::string> k = manifest_detail::key_names(manifest_detail::train_fields());
  return k;
}
const std::vector<std::string>& rules_keys() {
  static const std::vector<std::string> k = manifest_detail::key_names(manifest_detail::rules_fields());
  return k;
}

const std::vector<std::string>& pretrain_keys() {
  static const std::vector<std::string> k = manifest_detail::key_names(manifest_detail::pretrain_fields());
  return k;
}

TrainConfig pretraining_train_config(const Manifest& m) {
  TrainConfig t = m.pretrain.train;
  t.seed = m.train.seed;
  t.eval_batch_size = t.batch_size;
  return t;
}

std::vector<int64_t> trial_seeds(const Manifest& m) {
  return m.rules.seeds.empty() ? std::vector<int64_t>{m.train.seed} : m.rules.seeds;
}

}  // namespace lra::host
