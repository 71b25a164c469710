// parse_manifest: TOML text -> Manifest (structure, types, then validate_impl).
#include <algorithm>
#include <optional>
#include <utility>

#include "common/text.h"
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace {

using namespace manifest_detail;

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

// Top-level structure: known strings and the four sections, nothing else.
void check_top_level_keys(const toml::table& root, const Ctx& ctx) {
  auto unknown = first_unknown(root, [](const std::string& k) {
    return std::find(top_keys().begin(), top_keys().end(), k) != top_keys().end() ||
           std::find(section_names().begin(), section_names().end(), k) != section_names().end() || k == "grid" ||
           k == "settings";
  });
  if (!unknown) return;
  const toml::node* n = root.get(unknown->first);
  std::vector<std::string> secs;
  for (const auto& s : section_names()) secs.push_back("[" + s + "]");
  secs.push_back("[grid]");
  secs.push_back("[settings]");
  std::string what = n && n->is_table() ? "unknown section [" + unknown->first + "]"
                                        : "unknown top-level key '" + unknown->first + "'";
  fail(ErrorKind::rules, ctx.at(unknown->second) + ": " + what + " (valid sections: " +
                             text::join(secs) + "; valid top-level keys: " + text::join(top_keys()) + ")");
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

void read_top_level(Manifest& m, const toml::table& root, const Ctx& ctx) {
  m.schema = top_string(root, "schema", true, ctx);
  if (m.schema != kManifestSchema) {  // another schema's keys would only confuse the messages below
    fail(ErrorKind::rules, ctx.at_key("schema") + ": schema = " + quote(m.schema) +
                               ": unsupported manifest schema; this host reads \"" + kManifestSchema + "\"");
  }
  m.name = top_string(root, "name", true, ctx);
  m.task = top_string(root, "task", true, ctx);
  m.description = top_string(root, "description", false, ctx);
}

// A table section, through its field table: every key known, every required key present.
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
                               " (valid keys: " + text::join(names) + ")");
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

// [data]: free-form scalars, carried as is.
void read_data(Manifest& m, const toml::table& tbl, const Ctx& ctx) {
  for (const auto& [k, v] : tbl) {
    std::string dotted = "data." + std::string(k.str());
    remember(ctx, dotted, v);
    m.data[std::string(k.str())] = convert_data(v, dotted, ctx);
  }
}

void read_sections(Manifest& m, const toml::table& root, const Ctx& ctx) {
  for (const auto& sec : section_names()) {
    const toml::node* n = root.get(sec);
    if (!n && optional_section(sec)) continue;
    if (!n) fail(ErrorKind::rules, ctx.label + ": missing section [" + sec + "]");
    const toml::table* tbl = n->as_table();
    if (!tbl)
      fail(ErrorKind::rules, ctx.at(*n) + ": " + sec + " = " + render(*n) + ": expected a section [" +
                                 sec + "] (a table), got " + node_type_name(*n));
    if (sec == "data") read_data(m, *tbl, ctx);
    else read_section(m, *tbl, sec, *fields_of(sec), ctx);
    if (sec == "pretrain") m.pretrain.present = true;
  }
  if (const toml::node* grid = root.get("grid")) read_grid(m, *grid, ctx);
  if (const toml::node* settings = root.get("settings")) {
    remember(ctx, "settings", *settings);
    read_settings(m, *settings, ctx);
  }
}

}  // namespace

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
  check_top_level_keys(root, ctx);
  read_top_level(m, root, ctx);
  read_sections(m, root, ctx);
  validate_impl(m, ctx);
  check_grid(m, ctx);  // the file's own settings: --set may leave the grid (an open run)
  check_settings(m, ctx);
  return m;
}

}  // namespace lra::host
