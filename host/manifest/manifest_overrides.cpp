// apply_override (--set key=value) and the UTF-8 check of command-line assignments.
#include <algorithm>
#include <utility>

#include "common/text.h"
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace {

using namespace manifest_detail;

std::string all_dotted_keys_hint() {
  std::vector<std::string> parts;
  for (const auto& sec : {"model", "train", "rules", "pretrain"})
    parts.push_back(std::string(sec) + ".{" + text::join(key_names(*fields_of(sec)), ",") + "}");
  parts.push_back("data.<key>");
  return text::join(parts, " ");
}

// "key=value", both trimmed and non-empty; syntax problems are usage errors.
struct Assignment {
  std::string label;  // "--set <assignment>", for messages
  std::string key, raw;
};

Assignment split_assignment(const std::string& assignment) {
  Assignment a{"--set " + assignment, {}, {}};
  auto eq = assignment.find('=');
  a.key = std::string(text::trim(assignment.substr(0, eq == std::string::npos ? assignment.size() : eq)));
  if (a.key.rfind("mixer.", 0) == 0) {
    fail(ErrorKind::usage, a.label + ": '" + a.key +
                               "' is a mixer option, not a manifest key; mixer.* options go to the plugin");
  }
  if (eq == std::string::npos) {
    fail(ErrorKind::usage, a.label + ": expected key=value, e.g. --set train.steps=100");
  }
  a.raw = std::string(text::trim(assignment.substr(eq + 1)));
  if (a.key.empty()) fail(ErrorKind::usage, a.label + ": missing key before '=' (e.g. --set train.steps=100)");
  if (a.raw.empty()) fail(ErrorKind::usage, a.label + ": missing value after '=' (e.g. --set train.steps=100)");
  return a;
}

// What the key names: a table field, or (def == nullptr) the data.* key `name`.
struct Target {
  const FieldDef* def = nullptr;
  std::string name;
};

[[noreturn]] void fail_unknown_key(const Assignment& a, const std::string& section,
                                   const std::vector<FieldDef>* defs, bool dotted) {
  const std::string& key = a.key;
  std::vector<std::string> all;
  for (const auto& sec : {"model", "train", "rules", "pretrain"})
    for (const auto& k : key_names(*fields_of(sec))) all.push_back(std::string(sec) + "." + k);
  std::string hint = closest(key, all);
  if (hint.empty() && !dotted) {
    for (const auto& k : all)  // the first section that has it: train.steps before pretrain.steps
      if (k.substr(k.find('.') + 1) == key) {
        hint = k;
        break;
      }
  }
  std::string why;
  if (std::find(top_keys().begin(), top_keys().end(), key) != top_keys().end())
    why = "'" + key + "' cannot be overridden";
  else if (defs)
    why = "unknown key '" + key + "' (valid keys in [" + section + "]: " + text::join(key_names(*defs)) + ")";
  else
    why = "unknown key '" + key + "' (valid keys: " + all_dotted_keys_hint() + ")";
  fail(ErrorKind::rules, a.label + ": " + why + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
}

Target resolve_key(const Assignment& a) {
  const std::string& key = a.key;
  auto dot = key.find('.');
  std::string section = dot == std::string::npos ? std::string() : key.substr(0, dot);
  Target t;
  t.name = dot == std::string::npos ? key : key.substr(dot + 1);
  const std::vector<FieldDef>* defs = fields_of(section);
  if (defs) {
    for (const auto& d : *defs)
      if (t.name == d.key) t.def = &d;
  }
  const bool data_key = section == "data" && !t.name.empty() &&
                        std::all_of(t.name.begin(), t.name.end(), is_name_char);
  if (!t.def && !data_key) fail_unknown_key(a, section, defs, dot != std::string::npos);
  return t;
}

// The value read as TOML; a bare word that is not TOML is a string
// (so --set model.pooling=mean works without shell-escaped quotes).
class OverrideValue {
 public:
  explicit OverrideValue(const Assignment& a) : string_node_(a.raw) {
    const std::string& raw = a.raw;
    const std::string doc = "x = " + raw + "\n";
    try {
      parsed_ = toml::parse(std::string_view(doc), std::string_view("--set"));
    } catch (const toml::parse_error& e) {
      const char first = raw.front();
      if (first == '"' || first == '\'' || first == '[' || first == '{' ||
          raw.find('\n') != std::string::npos) {
        fail(ErrorKind::usage, a.label + ": cannot read the value " + raw + " as TOML: " +
                                   std::string(e.description()));
      }
      as_string_ = true;
    }
    if (!as_string_ && (parsed_.size() != 1 || !parsed_.get("x"))) {
      fail(ErrorKind::usage, a.label + ": the value must be a single TOML value");
    }
  }
  const toml::node& node() const {
    return as_string_ ? static_cast<const toml::node&>(string_node_) : *parsed_.get("x");
  }

 private:
  toml::table parsed_;
  bool as_string_ = false;
  toml::value<std::string> string_node_;
};

}  // namespace

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

bool apply_override(Manifest& m, const std::string& assignment) {
  // Command-line bytes: everything downstream (messages, result.json,
  // checkpoints) is UTF-8 text, as a TOML manifest is by definition.
  require_utf8_assignment(assignment);
  const Assignment a = split_assignment(assignment);
  const Target target = resolve_key(a);
  const OverrideValue value(a);

  if (a.key.rfind("pretrain.", 0) == 0 && !m.pretrain.present)
    fail(ErrorKind::rules, a.label + ": " + m.source + " has no [pretrain] section (it trains from scratch); "
                               "pretraining settings apply under --protocol spt");
  Ctx ctx{a.label, false, nullptr};
  Manifest updated = m;
  if (target.def) {
    target.def->set(updated, convert(value.node(), target.def->kind, a.key, ctx));
  } else {
    updated.data[target.name] = convert_data(value.node(), a.key, ctx);
  }
  validate_impl(updated, ctx);
  // A [grid] axis moved to another of its values: a point of the protocol,
  // not an override. Off the grid it is an override like any other.
  const GridAxis* axis = target.def ? grid_axis(updated, a.key) : nullptr;
  const bool grid_point = axis && std::find(axis->values.begin(), axis->values.end(),
                                            current_value(updated, a.key)) != axis->values.end();
  if (!grid_point) updated.overrides.push_back(a.key + "=" + a.raw);
  m = std::move(updated);
  return grid_point;
}

}  // namespace lra::host
