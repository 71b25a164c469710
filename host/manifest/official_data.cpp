#include "manifest/official_data.h"

#include <toml++/toml.h>

#include "lra/status.h"
#include "manifest/embedded.h"

namespace lra::host {
namespace {

[[noreturn]] void broken(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::internal, source + ": " + what + " (the official data table is part of the host's source; "
                                                           "rebuild from an unmodified checkout)");
}

}  // namespace

std::vector<OfficialData> parse_official_data(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    broken(source, std::string("not valid TOML: ") + std::string(e.description()));
  }
  const auto* schema = root.get_as<std::string>("schema");
  if (!schema || schema->get() != "lrahost.official-data/v1") broken(source, "schema must be \"lrahost.official-data/v1\"");
  const auto* rows = root.get_as<toml::array>("data");
  if (!rows) broken(source, "no [[data]] rows");
  std::vector<OfficialData> out;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const std::string where = "data[" + std::to_string(i) + "]";
    const auto* t = (*rows)[i].as_table();
    if (!t) broken(source, where + " is not a table");
    OfficialData d;
    auto str = [&](const char* key, bool required) {
      const auto* v = t->get_as<std::string>(key);
      if (!v && required) broken(source, where + ": missing string '" + key + "'");
      return v ? v->get() : std::string();
    };
    auto count = [&](const char* key) {
      const auto* v = t->get_as<int64_t>(key);
      if (!v || v->get() <= 0) broken(source, where + ": '" + key + "' must be a positive integer");
      return v->get();
    };
    d.release = str("release", true);
    d.task = str("task", true);
    d.setting = str("setting", false);
    if (d.setting.empty()) d.setting = "baseline";
    d.train = count("train");
    d.val = count("val");
    d.test = count("test");
    d.fingerprint = str("fingerprint", false);
    if (!d.fingerprint.empty() && (d.fingerprint.rfind("sha256:", 0) != 0 || d.fingerprint.size() != 71))
      broken(source, where + ": fingerprint must be \"sha256:\" and 64 hex digits");
    if (t->contains("vocab_size") || t->contains("num_classes")) {
      d.vocab_size = count("vocab_size");
      d.num_classes = count("num_classes");
      const auto* seq = t->get_as<bool>("sequence");
      if (t->contains("sequence") && !seq) broken(source, where + ": 'sequence' must be true or false");
      d.sequence = seq && seq->get();
      d.readout = str("readout", false);
      if (d.readout.empty()) d.readout = "every_position";
      if (d.readout != "every_position" && d.readout != "from_last_state")
        broken(source, where + ": 'readout' must be \"every_position\" or \"from_last_state\"");
    }
    for (const auto& o : out)
      if (o.release == d.release && o.task == d.task && o.setting == d.setting)
        broken(source, where + " repeats " + d.release + " " + d.task + " (setting " + d.setting + ")");
    out.push_back(std::move(d));
  }
  return out;
}

const std::vector<OfficialData>& official_data() {
  static const std::vector<OfficialData> rows = [] {
    const EmbeddedFile* f = find_embedded(kOfficialDataFile);
    if (!f) broken(kOfficialDataFile, "not embedded");
    return parse_official_data(f->text, std::string("builtin:") + kOfficialDataFile);
  }();
  return rows;
}

std::optional<OfficialData> find_official_data(const std::string& release, const std::string& task,
                                              const std::string& setting) {
  const std::string want = setting.empty() ? "baseline" : setting;
  for (const auto& d : official_data())
    if (d.release == release && d.task == task && d.setting == want) return d;
  return std::nullopt;
}

}  // namespace lra::host
