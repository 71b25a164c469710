// manifest/manifest_fields.h — internals shared by the manifest's reading,
// validation, overrides and serialisation (not part of the public API; callers
// include manifest/manifest.h).
//
// The field tables are the one list of the [model], [train] and [rules] keys:
// each FieldDef says how a TOML value is converted (Kind), where it is stored
// (set: used by parse_manifest and apply_override) and what to_json writes
// for it (get).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "manifest/manifest.h"
#include "manifest/manifest_text.h"

namespace lra::host::manifest_detail {

[[noreturn]] inline void fail(ErrorKind kind, const std::string& msg) { throw Error(kind, msg); }

// Letters, digits, '_' and '-': task names and data.* keys given with --set.
bool is_name_char(char c);

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
  void (*set)(Manifest&, const Typed&);     // stores a converted value (reading, --set)
  nlohmann::json (*get)(const Manifest&);  // the value to_json writes; null = key left out
  bool optional = false;  // absent = the TrainConfig/ModelConfig default (keys added after v1's first release)
};

const std::vector<FieldDef>& model_fields();
const std::vector<FieldDef>& train_fields();
const std::vector<FieldDef>& rules_fields();
const std::vector<FieldDef>& pretrain_fields();
// The table of "model", "train", "rules" or "pretrain"; nullptr for any other section.
const std::vector<FieldDef>* fields_of(const std::string& section);
std::vector<std::string> key_names(const std::vector<FieldDef>& defs);

const std::vector<std::string>& top_keys();       // schema name task description
const std::vector<std::string>& section_names();  // model train data rules pretrain
// Sections a manifest may leave out ([pretrain]: a from-scratch protocol).
bool optional_section(const std::string& section);

// What a value of kind `k` must look like, for messages.
const char* expected(Kind k);

// ---------------------------------------------------------------------------
// TOML conversion (wrong types are ErrorKind::rules errors located by ctx).

const char* node_type_name(const toml::node& n);
// A TOML value as it would be written in the manifest.
std::string render(const toml::node& n, int depth = 0);
// Converts a TOML node to the field's kind.
Typed convert(const toml::node& n, Kind kind, const std::string& dotted, const Ctx& ctx);
// A data.* value: any scalar.
lra::Value convert_data(const toml::node& n, const std::string& dotted, const Ctx& ctx);

// ---------------------------------------------------------------------------
// Semantic checks (manifest_validate.cpp), shared by parse_manifest, validate
// and apply_override.
void validate_impl(const Manifest& m, const Ctx& ctx);

// ---------------------------------------------------------------------------
// [grid] (manifest_grid.cpp).
void read_grid(Manifest& m, const toml::node& grid, const Ctx& ctx);
nlohmann::json grid_json(const Manifest& m);  // {"model.d_model": [64, 128], ...}
void grid_from_json(Manifest& m, const nlohmann::json& grid, const std::string& source);
// A file's grid: each axis's own value is one of its values; integer axes list integers.
void check_grid(const Manifest& m, const Ctx& ctx);
// The value the manifest now holds at an axis's key.
double current_value(const Manifest& m, const std::string& key);
std::string grid_values_text(const GridAxis& axis);  // "64, 128"

// ---------------------------------------------------------------------------
// [settings] (manifest_settings.cpp).
void read_settings(Manifest& m, const toml::node& settings, const Ctx& ctx);
// Each setting applies cleanly to the file, changes what it lists, and differs from the others.
void check_settings(const Manifest& m, const Ctx& ctx);
nlohmann::json settings_json(const Manifest& m);  // {"vocab_size-32": {"data.vocab_size": 32}, ...}
// config.settings and config.setting read back (`setting` may be null: an error then).
void settings_from_json(Manifest& m, const nlohmann::json& settings, const nlohmann::json* setting,
                        const std::string& source);
// "data.vocab_size=32" as --set takes it.
std::string setting_assignment(const std::string& key, const nlohmann::json& value);
// The value the manifest holds at a dotted key, as to_json writes it (null: a data key it lacks).
nlohmann::json value_at(const Manifest& m, const std::string& key);

}  // namespace lra::host::manifest_detail
