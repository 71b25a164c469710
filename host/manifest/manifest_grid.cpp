// [grid]: the hyperparameter grid a protocol sweeps (Zoology's widths and
// learning rates, MAD's learning rate x weight decay). Read from the file,
// written into the resolved configuration, read back from a result, and the
// test of whether a --set lands on one of its points.
#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace manifest_detail {
namespace {

using nlohmann::json;

// 64, 0.001: integral values without a fraction, others in their shortest exact form.
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return json(v).dump();
}

// The [model] or [train] field a grid key names, or nullptr.
const FieldDef* grid_field(const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) return nullptr;
  const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
  if (section != "model" && section != "train") return nullptr;
  for (const auto& d : *fields_of(section))
    if (name == d.key) return &d;
  return nullptr;
}

std::vector<std::string> numeric_keys() {
  std::vector<std::string> out;
  for (const char* section : {"model", "train"})
    for (const auto& d : *fields_of(section))
      if ((d.kind == Kind::integer || d.kind == Kind::number) && std::string(d.key) != "seed")
        out.push_back(std::string(section) + "." + d.key);
  return out;
}

// Why `key` cannot be an axis, or "" when it can.
std::string axis_problem(const std::string& key) {
  const FieldDef* d = grid_field(key);
  if (key == "train.seed")
    return "train.seed is the trial seed (rules.seeds lists the seeds of a submission), not a grid axis";
  if (!d || (d->kind != Kind::integer && d->kind != Kind::number))
    return "'" + key + "' is not a numeric [model] or [train] key (grid axes: " + text::join(numeric_keys()) + ")";
  return "";
}

void add_axis(Manifest& m, const std::string& key, const std::vector<double>& values, const std::string& where) {
  if (const std::string why = axis_problem(key); !why.empty()) fail(ErrorKind::rules, where + ": " + why);
  if (values.empty()) fail(ErrorKind::rules, where + ": grid." + key + " is empty; list the values the protocol sweeps");
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (values[i] == values[j])
        fail(ErrorKind::rules, where + ": grid." + key + " lists " + number_text(values[i]) + " twice");
  m.grid.push_back({key, values});
}

}  // namespace

std::string grid_values_text(const GridAxis& axis) {
  std::vector<std::string> parts;
  for (double v : axis.values) parts.push_back(number_text(v));
  return text::join(parts);
}

void read_grid(Manifest& m, const toml::node& node, const Ctx& ctx) {
  const toml::table* grid = node.as_table();
  if (!grid) fail(ErrorKind::rules, ctx.at(node) + ": grid = " + render(node) + ": expected a section [grid]");
  for (const auto& [section, sub] : *grid) {
    const std::string sec(section.str());
    const toml::table* keys = sub.as_table();
    if (!keys)
      fail(ErrorKind::rules, ctx.at(sub) + ": grid." + sec + ": write each axis as a dotted key, e.g. "
                                           "model.d_model = [64, 128] or train.lr = [1e-3, 1e-2] under [grid]");
    if (sec != "model" && sec != "train")
      fail(ErrorKind::rules, ctx.at(sub) + ": grid." + sec + ": only numeric [model] and [train] keys can be "
                                           "grid axes (" + text::join(numeric_keys()) + ")");
    for (const auto& [k, v] : *keys) {
      const std::string key = sec + "." + std::string(k.str());
      const toml::array* arr = v.as_array();
      std::vector<double> values;
      bool numbers = arr != nullptr;
      if (arr)
        for (const auto& e : *arr) {
          if (auto i = e.value_exact<int64_t>()) values.push_back(static_cast<double>(*i));
          else if (auto d = e.value_exact<double>()) values.push_back(*d);
          else numbers = false;
        }
      if (!numbers)
        fail(ErrorKind::rules, ctx.at(v) + ": grid." + key + " = " + render(v) + ": expected an array of numbers");
      add_axis(m, key, values, ctx.at(v));
    }
  }
}

json grid_json(const Manifest& m) {
  json out = json::object();
  for (const auto& axis : m.grid) {
    json values = json::array();
    const bool integer = grid_field(axis.key)->kind == Kind::integer;
    for (double v : axis.values) values.push_back(integer ? json(static_cast<int64_t>(v)) : json(v));
    out[axis.key] = std::move(values);
  }
  return out;
}

void grid_from_json(Manifest& m, const json& grid, const std::string& source) {
  if (!grid.is_object()) fail(ErrorKind::data, source + ": config.grid = " + grid.dump() + ": expected an object");
  for (const auto& [key, values] : grid.items()) {
    std::vector<double> v;
    if (!values.is_array()) fail(ErrorKind::data, source + ": config.grid." + key + ": expected an array of numbers");
    for (const auto& e : values) {
      if (!e.is_number()) fail(ErrorKind::data, source + ": config.grid." + key + ": expected an array of numbers");
      v.push_back(e.get<double>());
    }
    try {
      add_axis(m, key, v, source + ": config");
    } catch (const Error& e) {
      fail(ErrorKind::data, e.what());
    }
  }
}

double current_value(const Manifest& m, const std::string& key) {
  return grid_field(key)->get(m).get<double>();
}

void check_grid(const Manifest& m, const Ctx& ctx) {
  for (const auto& axis : m.grid) {
    const FieldDef* d = grid_field(axis.key);
    for (double v : axis.values)
      if (d->kind == Kind::integer && v != std::floor(v))
        fail(ErrorKind::rules, ctx.at_key("grid." + axis.key) + ": grid." + axis.key + " lists " +
                                   number_text(v) + ", but " + axis.key + " is an integer");
    const double have = current_value(m, axis.key);
    if (std::find(axis.values.begin(), axis.values.end(), have) == axis.values.end())
      fail(ErrorKind::rules, ctx.at_key(axis.key) + ": " + axis.key + " = " + number_text(have) +
                                 " is not one of grid." + axis.key + " (" + grid_values_text(axis) +
                                 "): the manifest's own setting must be a point of its grid");
  }
}

}  // namespace manifest_detail

const GridAxis* grid_axis(const Manifest& m, const std::string& key) {
  for (const auto& axis : m.grid)
    if (axis.key == key) return &axis;
  return nullptr;
}

std::vector<std::string> grid_point(const Manifest& m) {
  std::vector<std::string> out;
  for (const auto& axis : m.grid) {
    const auto dot = axis.key.find('.');
    const std::string section = axis.key.substr(0, dot), name = axis.key.substr(dot + 1);
    for (const auto& d : *manifest_detail::fields_of(section))
      if (name == d.key) out.push_back(axis.key + "=" + d.get(m).dump());
  }
  return out;
}

}  // namespace lra::host
